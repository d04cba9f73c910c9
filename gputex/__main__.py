import sys

from .inputs import read_ahead

read_ahead(sys.argv[1:])  # one large input's bytes read while the CLI's modules import

from .cli import console  # noqa: E402

console()
