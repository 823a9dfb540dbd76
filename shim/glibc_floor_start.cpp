// The glibc floor for executables (glibc_floor.cpp says why and how): the program's start.
//
// crt1.o of glibc 2.34 and newer calls __libc_start_main@GLIBC_2.34 without an init function, and
// that glibc runs the program's constructors itself (_init, then .init_array). An older glibc's
// __libc_start_main runs only the init function it is handed (its crt1.o handed it
// __libc_csu_init). So the start calls the old version and hands it that work. A new glibc still
// accepts an init function (for programs linked before 2.34) and then runs only it: constructors
// run once on every glibc. Destructors need nothing: the dynamic loader runs the program's
// .fini_array everywhere.
using Main = int (*)(int, char**, char**);
using Init = void (*)(int, char**, char**);

extern "C" int gmp_old_libc_start_main(Main main, int argc, char** argv, Init init, void (*fini)(),
                                       void (*rtld_fini)(), void* stack_end);
__asm__(".symver gmp_old_libc_start_main, __libc_start_main@GLIBC_2.2.5");

// From the executable's link: crti.o's _init and the linker's bounds of .init_array.
extern "C" {
void _init();
extern const Init __init_array_start[] __attribute__((visibility("hidden")));
extern const Init __init_array_end[] __attribute__((visibility("hidden")));
}

namespace {

void run_constructors(int argc, char** argv, char** envp) {
  _init();
  for (const Init* f = __init_array_start; f != __init_array_end; ++f) (*f)(argc, argv, envp);
}

}  // namespace

extern "C" __attribute__((visibility("hidden"))) int __wrap___libc_start_main(
    Main main, int argc, char** argv, Init init, void (*fini)(), void (*rtld_fini)(), void* stack_end) {
  return gmp_old_libc_start_main(main, argc, argv, init != nullptr ? init : run_constructors, fini,
                                 rtld_fini, stack_end);
}
