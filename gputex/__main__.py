from .start import console

console()
