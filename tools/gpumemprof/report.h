#pragma once
namespace gmp::tool {
int report_main(int argc, char** argv);
}
