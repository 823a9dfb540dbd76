// `write_framework_run DIR`: writes framework_run.h's training run into DIR (which must exist), for
// tests outside this binary (tests/html/render_check.py draws its HTML report in Chromium).
#include <cstdio>

#include "framework_run.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_framework_run DIR\n");
    return 2;
  }
  gmp::test::write_training_run(argv[1]);
  return 0;
}
