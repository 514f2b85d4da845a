# shellcheck shell=bash
# libs_copy DIR (sourced; not a test by itself): copies the build's shared
# libraries ($B/.libs) into DIR, made readable by every user, for cases
# that run a program as another user (postgres, nobody). The clone, and so
# the build directory, may sit in a folder only root can enter (mode 0700,
# as /root is); there the loader of such a program cannot read the
# preload, and it would run unpreloaded. Use DIR's copy in LD_PRELOAD and
# LD_LIBRARY_PATH=DIR (the libraries' run path names the build directory).
libs_copy() {
  mkdir -p "$1" && cp -a "$B"/.libs/*.so* "$1"/ && chmod -R a+rX "$1" && chmod a+rx "$(dirname "$1")"
}
