#include "pickle_writer.h"

#include <algorithm>

#include "json_text.h"

namespace gmp::analysis {
namespace {

// The opcodes (CPython's Lib/pickle.py names them the same).
constexpr uint8_t kProto = 0x80, kStop = '.', kMark = '(';
constexpr uint8_t kBinInt1 = 'K', kBinInt2 = 'M', kBinInt = 'J', kLong1 = 0x8a;
constexpr uint8_t kNewTrue = 0x88, kNewFalse = 0x89;
constexpr uint8_t kShortBinUnicode = 0x8c, kBinUnicode = 'X';
constexpr uint8_t kEmptyList = ']', kAppends = 'e', kEmptyDict = '}', kSetItems = 'u', kTuple = 't';
constexpr uint8_t kMemoize = 0x94, kBinGet = 'h', kLongBinGet = 'j';

constexpr uint32_t kBatch = 1000;  // items per APPENDS or SETITEMS, as CPython writes them

// `s` as valid UTF-8: through the JSON encoder every tool output uses, which replaces each byte
// that is not UTF-8 with U+FFFD, and back.
std::string valid_utf8(std::string_view s) {
  return nlohmann::json::parse(json_text(nlohmann::json(std::string(s)))).get<std::string>();
}

}  // namespace

void PickleWriter::le(uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
}

void PickleWriter::begin() {
  op(kProto);
  op(4);
}

void PickleWriter::end() { op(kStop); }

void PickleWriter::value_done() {
  if (open_.empty()) return;
  Open& o = open_.back();
  ++o.values;
  if (o.kind == Container::List && o.values == kBatch) {
    op(kAppends);
    op(kMark);
    o.values = 0;
  } else if (o.kind == Container::Dict && o.values == 2 * kBatch) {
    op(kSetItems);
    op(kMark);
    o.values = 0;
  }
}

void PickleWriter::integer(uint64_t v) {
  if (v < (1u << 8)) {
    op(kBinInt1);
    le(v, 1);
  } else if (v < (1u << 16)) {
    op(kBinInt2);
    le(v, 2);
  } else if (v < (1ull << 31)) {
    op(kBinInt);
    le(v, 4);
  } else {
    // The fewest bytes whose top bit is clear: the value read as two's complement stays positive.
    int n = 1;
    while (n < 8 && (v >> (8 * n - 1)) != 0) ++n;
    if (n == 8 && (v >> 63) != 0) n = 9;
    op(kLong1);
    op(static_cast<uint8_t>(n));
    le(v, std::min(n, 8));
    if (n == 9) op(0);
  }
  value_done();
}

void PickleWriter::boolean(bool v) {
  op(v ? kNewTrue : kNewFalse);
  value_done();
}

void PickleWriter::string(std::string_view s) {
  std::string repaired;
  if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
    repaired = valid_utf8(s);
    s = repaired;
  }
  if (s.size() < 256) {
    op(kShortBinUnicode);
    le(s.size(), 1);
  } else {
    op(kBinUnicode);
    le(s.size(), 4);
  }
  out_.append(s.data(), s.size());
  value_done();
}

void PickleWriter::memo_string(std::string_view s) {
  auto it = strings_.find(std::string(s));
  if (it != strings_.end()) {
    get(it->second);
    return;
  }
  string(s);
  strings_.emplace(std::string(s), memoize());
}

void PickleWriter::open_container(Container kind) {
  if (kind == Container::List) op(kEmptyList);
  if (kind == Container::Dict) op(kEmptyDict);
  op(kMark);
  open_.push_back({kind});
}

void PickleWriter::close_container() {
  const Container kind = open_.back().kind;
  op(kind == Container::List ? kAppends : kind == Container::Dict ? kSetItems : kTuple);
  open_.pop_back();
  value_done();
}

uint32_t PickleWriter::memoize() {
  op(kMemoize);
  return memo_size_++;
}

void PickleWriter::get(uint32_t slot) {
  if (slot < 256) {
    op(kBinGet);
    le(slot, 1);
  } else {
    op(kLongBinGet);
    le(slot, 4);
  }
  value_done();
}

}  // namespace gmp::analysis
