# strings.sh: peer of strings.ral at full size. Build 100,000 strings into
# an array and join them with commas; print the length.
parts=()
for (( i = 0; i < 100000; i++ )); do
  parts+=("item-$i")
done
IFS=,
joined="${parts[*]}"
echo "${#joined}"
