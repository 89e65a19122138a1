-- records.lua: peer of records.ral. Create 300,000 records (tables), keep
-- those whose score is even, fold ids and scores into one total. map,
-- filter and fold call a closure per element, as ral's builtins do.
local function map(f, xs)
  local out = {}
  for i = 1, #xs do out[i] = f(xs[i]) end
  return out
end
local function filter(p, xs)
  local out = {}
  for i = 1, #xs do
    local x = xs[i]
    if p(x) then out[#out + 1] = x end
  end
  return out
end
local function fold(f, acc, xs)
  for i = 1, #xs do acc = f(acc, xs[i]) end
  return acc
end
local function range(a, b)
  local out = {}
  for i = a, b - 1 do out[#out + 1] = i end
  return out
end
local rs = map(function(i) return { id = i, score = i % 7, name = "r" .. i } end,
  range(0, 300000))
local kept = filter(function(r) return r.score % 2 == 0 end, rs)
local total = fold(function(acc, r) return acc + r.id + r.score end, 0, kept)
print(total)
