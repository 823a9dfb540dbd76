#pragma once
namespace gmp::tool {
// `gpumemprof run [options] -- CMD [ARGS...]`
int run_main(int argc, char** argv);
}
