# Sourced by the unit checks (sh): `systemd-analyze verify` runs `man` for every Documentation=man:X(N)
# of a unit, so point MANPATH at the repository's own pages (linked into DIR/man/manN): a unit that
# names a page the package does not ship fails the check.   usage: repo_manpath DIR
repo_manpath() {
  for page in "$(dirname "$0")"/../../man/*.[1-8]; do
    sec=${page##*.}
    mkdir -p "$1/man/man$sec"
    ln -sf "$(cd "$(dirname "$page")" && pwd)/$(basename "$page")" "$1/man/man$sec/"
  done
  MANPATH="$1/man"
  export MANPATH
}
