-- loop.lua: peer of loop.ral. Tail-recursive sum of 1..3,000,000
-- (Lua's `return f(...)` is a proper tail call).
local function sum_to(n, acc)
  if n == 0 then return acc end
  return sum_to(n - 1, acc + n)
end
print(sum_to(3000000, 0))
