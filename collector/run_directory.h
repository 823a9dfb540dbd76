// Naming and creating the run directory (docs/run-directory.md §Naming, docs/design.md §The run directory).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "process_info.h"
#include "trusted_dir.h"

namespace gmp {

// Expands %e (executable name; a Python interpreter's script or module: program_name.h), %p (pid),
// %h (host), %r (rank, "0" when none), %R ("rank<R>." when a
// launcher gave the process a rank, nothing otherwise: `gpumemprof run` names its directories
// %R%e.%p), %j (job id, "nojob" when none; a '/' in it becomes '_'), %t (UTC start time) and %%. Any
// other '%' sequence, and a '%' at the end, is kept as written, with one warning naming them.
std::string expand_output_template(const std::string& tpl, const ProcessInfo& info);

// A run directory just created: its path as named (`path`, with the suffix that made it new), its
// descriptor, and its parent's with its name there and its identity, to remove it again while it
// is still empty.
struct CreatedDir {
  std::string path;
  Fd dir;
  Fd parent;
  std::string name;
  dev_t dev = 0;
  ino_t ino = 0;
};

// Creates `path` with mode 0700, parents as needed, reached by the rules of trusted_dir.h with
// `self` as our uid. An existing path is never reused: `.1`, `.2`, ... are tried in turn. Returns
// the directory created, or nullopt with `error` set.
std::optional<CreatedDir> create_run_directory(const std::string& path, std::string& error, uid_t self = geteuid());

// Removes `created`, found through its parent's descriptor, if that name is still this empty
// directory.
void remove_created_dir(const CreatedDir& created);

}  // namespace gmp
