/* ``gputex._mipcpu128``: the C engine of _mipcpu.c with 128-bit sums, for bases of 2**24 to 2**28
 * texels (gputex/mips/cpu.py picks it there; see SUMS128 in _mipcpu.c). */
#define SUMS128 1
#include "_mipcpu.c"
