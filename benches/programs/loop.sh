# loop.sh: peer of loop.ral, scaled down to 300,000 steps (a tenth of the
# full size). bash has no proper tail calls, so the tail-recursive sum is
# the loop a tail call amounts to. Prints 45000150000.
sum_to() {
  local n=$1 acc=$2
  while (( n != 0 )); do
    (( acc += n, n -= 1 ))
  done
  echo "$acc"
}
sum_to 300000 0
