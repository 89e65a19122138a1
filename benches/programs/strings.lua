-- strings.lua: peer of strings.ral. Build 100,000 strings with a function
-- called per element, then join them with commas; print the length.
local function map(f, xs)
  local out = {}
  for i = 1, #xs do out[i] = f(xs[i]) end
  return out
end
local function range(a, b)
  local out = {}
  for i = a, b - 1 do out[#out + 1] = i end
  return out
end
local parts = map(function(i) return "item-" .. i end, range(0, 100000))
local joined = table.concat(parts, ",")
print(#joined)
