-- closures.lua: peer of closures.ral. map, filter and fold over 1,000,000
-- integers, calling a closure per element through small helpers, as ral's
-- builtins call a closure.
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
local squares = map(function(x) return x * x % 1000 end, range(0, 1000000))
local even = filter(function(x) return x % 2 == 0 end, squares)
print(fold(function(acc, x) return acc + x end, 0, even))
