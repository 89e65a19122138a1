# records.sh: peer of records.ral, scaled down to 30,000 records (a tenth
# of the full size). bash has no records: each record is one entry in three
# parallel arrays (id, score, name). Keep those whose score is even and sum
# their ids and scores. Prints 257189997.
n=30000
ids=() scores=() names=()
for (( i = 0; i < n; i++ )); do
  ids+=("$i")
  scores+=("$(( i % 7 ))")
  names+=("r$i")
done
kept=()
for (( k = 0; k < n; k++ )); do
  if (( scores[k] % 2 == 0 )); then
    kept+=("$k")
  fi
done
total=0
for k in "${kept[@]}"; do
  (( total += ids[k] + scores[k] ))
done
echo "$total"
