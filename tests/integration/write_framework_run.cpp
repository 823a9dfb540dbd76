// `write_framework_run DIR [categories]`: writes framework_run.h's training run (with `categories`,
// its categories run) into DIR (which must exist), for tests outside this binary
// (tests/html/render_check.py draws its HTML report in Chromium).
#include <cstdio>
#include <string>

#include "framework_run.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::string(argv[2]) != "categories")) {
    std::fprintf(stderr, "usage: write_framework_run DIR [categories]\n");
    return 2;
  }
  if (argc == 3) {
    gmp::test::write_categories_run(argv[1]);
  } else {
    gmp::test::write_training_run(argv[1]);
  }
  return 0;
}
