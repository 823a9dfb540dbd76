# Writes OUTPUT, a C++ source that defines `extern const char* const NAME` in namespace NAMESPACE as
# the bytes of INPUT, NUL-terminated. The HTML report's style sheet and script stay real files that
# editors and linters understand, yet the gpumemprof command keeps them inside its one static binary
# (no file to find at run time). tools/gpumemprof/CMakeLists.txt runs it at build time:
#   cmake -DINPUT=report.css -DOUTPUT=report_css.cpp -DNAME=kHtmlReportCss -DNAMESPACE=gmp::tool -P embed.cmake
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line_of_16)
string(REGEX REPLACE "(${line_of_16})" "\\1\n" bytes "${bytes}")
get_filename_component(input_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}" "// Generated from ${input_name} by embed.cmake at build time: do not edit.
namespace ${NAMESPACE} {
namespace {
const unsigned char kBytes[] = {
${bytes}0x00};
}  // namespace
extern const char* const ${NAME} = reinterpret_cast<const char*>(kBytes);
}  // namespace ${NAMESPACE}
")
