import sys

from .decode import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO
from .inputs import read_ahead

# one large input read and decoded while the CLI's modules import
read_ahead(sys.argv[1:], max_pixels=DEFAULT_MAX_PIXELS, max_ratio=DEFAULT_MAX_RATIO)

from .cli import console  # noqa: E402

console()
