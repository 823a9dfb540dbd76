// The subcommands of the gpumemprof command. Each takes the arguments after its name and returns
// the process exit status: 0 success, 2 bad usage or unreadable input (a one-line message on stderr).
#pragma once
namespace gmp::tool {
int run_main(int argc, char** argv);     // run [options] -- CMD [ARGS...]
int report_main(int argc, char** argv);  // report DIR [--json]
int oom_main(int argc, char** argv);     // oom BUNDLE_OR_DIR [--json]
int export_main(int argc, char** argv);  // export DIR --format F [-o FILE]
int diff_main(int argc, char** argv);    // diff DIR_A DIR_B [--json]
int html_main(int argc, char** argv);    // html DIR -o FILE
int check_main(int argc, char** argv);   // check DIR_OR_ROOT LIMITS...
int top_main(int argc, char** argv);     // top [--once] [--json] [--root DIR]
}  // namespace gmp::tool
