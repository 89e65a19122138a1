# closures.py: peer of closures.ral. map, filter and fold over 1,000,000
# integers, calling a function per element (Python's builtins and
# functools.reduce).
from functools import reduce

squares = list(map(lambda x: x * x % 1000, range(0, 1000000)))
even = list(filter(lambda x: x % 2 == 0, squares))
print(reduce(lambda acc, x: acc + x, even, 0))
