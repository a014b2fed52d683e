"""The Python 2 names of `future`'s `past.builtins` that course files import, as Python 3 gives them."""

from functools import reduce

xrange = range
basestring = str
unicode = str
long = int
unichr = chr
raw_input = input

__all__ = ["basestring", "long", "raw_input", "reduce", "unichr", "unicode", "xrange"]
