#pragma once
// Who may change a file that decides what a process runs (fsauditd's config names the binaries it
// runs under `tools:`), checked like sshd's StrictModes.
#include <sys/types.h>

#include <filesystem>
#include <string>

#include "daemon/core/result.hpp"

namespace fsaudit {

// Whether `p` and its directory may decide what a process with effective uid `euid` runs:
//  * neither is writable by group or others (a sticky directory, like /tmp, may be);
//  * both are owned by root, or, for an unprivileged process, by root or `euid` itself (whatever
//    that file makes the process do, its own user could do anyway; other users could not).
// Otherwise `refused` (also when it cannot be checked), saying the path, its owner and mode, and the
// chown/chmod that fixes it.
Result<void> check_trusted_file(const std::filesystem::path& p, uid_t euid);

// The same for a process that must trust root only (fsaudit-helper, root CLI commands).
inline Result<void> check_trusted_file(const std::filesystem::path& p) { return check_trusted_file(p, 0); }

// A program a process with effective uid `euid` is about to run: the same rules for the file and for
// every directory above it up to "/", both along `p` as written and along the path its symlinks
// resolve to (any of them writable by another user could swap the program).
Result<void> check_trusted_executable(const std::filesystem::path& p, uid_t euid);

// State that a process with effective uid `euid` reads and acts on (root's canary records: which
// device, which offset, which bytes to restore): the directory, or its nearest existing ancestor
// when it does not exist yet, and every directory above it, checked as check_trusted_executable
// checks a program. A state directory another user can write would let that user choose what
// root writes.
Result<void> check_trusted_directory(const std::filesystem::path& dir, uid_t euid);

}  // namespace fsaudit
