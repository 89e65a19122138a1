-- fib.lua: peer of fib.ral. Naive doubly recursive Fibonacci of 30.
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end
print(fib(30))
