#!/bin/bash
set -u
D=/tmp/fsaudit-kl-cap
truncate -s 128M $D/a.img $D/b.img
A=$(losetup -f --show $D/a.img); B=$(losetup -f --show $D/b.img)
echo "loops $A $B"
cleanup() { umount $D/mnt 2>/dev/null; losetup -d $A; losetup -d $B; }
trap cleanup EXIT
mkfs.btrfs -q -f -d raid1 -m raid1 $A $B >/dev/null
mkdir -p $D/mnt
mount -t btrfs $A $D/mnt
python3 -c "import sys; sys.stdout.write(('FSAUDITKLPATTERN%08d' % 0)*0 + ''.join('FSAUDITKLPATTERN%08d'%i for i in range(2730)))" > $D/mnt/victim
sync
umount $D/mnt
# (a line reading /dev/kmsg here was removed: it blocked; dmesg was used afterwards instead)
# corrupt copy on A only
OFF=$(grep -a -b -o -F 'FSAUDITKLPATTERN00000000' $D/a.img | head -1 | cut -d: -f1)
echo "offset on A: $OFF"
printf 'XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX' | dd of=$D/a.img bs=1 seek=$OFF conv=notrunc status=none
mount -t btrfs $A $D/mnt
for i in 1 2 3 4; do cat $D/mnt/victim > /dev/null; done
umount $D/mnt
# corrupt again (read repair may have fixed it), then scrub
printf 'YYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYY' | dd of=$D/a.img bs=1 seek=$OFF conv=notrunc status=none
OFFB=$(grep -a -b -o -F 'FSAUDITKLPATTERN00000100' $D/b.img | head -1 | cut -d: -f1)
mount -t btrfs $A $D/mnt
btrfs scrub start -B $D/mnt
btrfs device stats $D/mnt
umount $D/mnt
echo "now corrupt both copies of a block for unrepairable"
printf 'ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ' | dd of=$D/a.img bs=1 seek=$OFF conv=notrunc status=none
OFFB0=$(grep -a -b -o -F 'FSAUDITKLPATTERN00000000' $D/b.img | head -1 | cut -d: -f1)
printf 'ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ' | dd of=$D/b.img bs=1 seek=$OFFB0 conv=notrunc status=none
mount -t btrfs $A $D/mnt
cat $D/mnt/victim > /dev/null; echo "cat rc=$?"
btrfs scrub start -B $D/mnt
umount $D/mnt
