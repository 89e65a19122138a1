# strings.py: peer of strings.ral. Build 100,000 strings with a function
# called per element, then join them with commas; print the length.
parts = list(map(lambda i: f"item-{i}", range(0, 100000)))
joined = ",".join(parts)
print(len(joined))
