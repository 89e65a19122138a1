# loop.py: peer of loop.ral. Python has no proper tail calls (3,000,000
# nested calls would overflow its stack), so the tail-recursive sum is
# written as the loop a tail call amounts to: one step per iteration.
def sum_to(n, acc):
    while n != 0:
        n, acc = n - 1, acc + n
    return acc


print(sum_to(3000000, 0))
