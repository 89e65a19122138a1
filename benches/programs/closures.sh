# closures.sh: peer of closures.ral, scaled down to 10,000 integers (bash
# has no closures; a function called per element stands in). Prints
# 2450000.
sq() { r=$(( $1 * $1 % 1000 )); }
total=0
for ((i = 0; i < 10000; i++)); do
  sq $i
  if (( r % 2 == 0 )); then total=$(( total + r )); fi
done
echo $total
