# fib.sh: peer of fib.ral, scaled down. Naive doubly recursive Fibonacci
# of 20 (21,891 calls against fib(30)'s 2,692,537: bash would take many
# minutes at full size). Results pass through a global, since a command
# substitution per call would fork. Prints 6765.
fib() {
  if (( $1 < 2 )); then
    r=$1
    return
  fi
  local a
  fib $(( $1 - 1 ))
  a=$r
  fib $(( $1 - 2 ))
  r=$(( a + r ))
}
fib 20
echo "$r"
