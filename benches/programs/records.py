# records.py: peer of records.ral. Create 300,000 records (dicts), keep
# those whose score is even, fold ids and scores into one total, calling a
# function per element as ral's map, filter and fold do.
from functools import reduce

rs = list(map(lambda i: {"id": i, "score": i % 7, "name": f"r{i}"}, range(0, 300000)))
kept = list(filter(lambda r: r["score"] % 2 == 0, rs))
total = reduce(lambda acc, r: acc + r["id"] + r["score"], kept, 0)
print(total)
