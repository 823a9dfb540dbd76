#include "redact.h"

#include <algorithm>
#include <cctype>

namespace gmp {
namespace {

bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
// Characters of a variable, option or parameter name: "X-Amz-Signature", "--db.password".
bool is_name_char(char c) { return is_alnum(c) || c == '_' || c == '-' || c == '.'; }
bool is_name(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_name_char); }

// Where a keyword may sit in a normalized name for the name to count as secret.
enum class After {
  kAnything,
  kNoLetter,  // the keyword is a whole word: "DB_PASS", "PASS2"; not "PASSES", "PATH"
  kNameEnd,   // only digits or '_' follow: "API_KEY", "HF_TOKEN"; not "NUM_KEY_VALUE_HEADS",
              // "MAX_TOKENS", "TOKENIZERS_PARALLELISM", which are model settings
};
struct Keyword {
  std::string_view word;
  bool word_start;  // no letter may precede it
  After after;
};
constexpr Keyword kSecretKeywords[] = {
    {"SECRET", false, After::kAnything},      {"PASSWORD", false, After::kAnything},
    {"PASSWD", false, After::kAnything},      {"PASSPHRASE", false, After::kAnything},
    {"CREDENTIAL", false, After::kAnything},  {"AUTH", false, After::kAnything},
    {"COOKIE", false, After::kAnything},      {"SESSION", false, After::kAnything},
    {"WEBHOOK", false, After::kAnything},     {"PRIVATE", false, After::kAnything},
    {"SIGNATURE", false, After::kAnything},   {"CONNECTION_STRING", false, After::kAnything},
    {"CONNECTIONSTRING", false, After::kAnything},
    {"TOKEN", false, After::kNameEnd},        {"KEY", false, After::kNameEnd},
    {"CERT", true, After::kAnything},  // CERT, CERTIFICATE; not CONCERT
    {"PASS", true, After::kNoLetter},         {"PWD", true, After::kNoLetter},
    {"PAT", true, After::kNoLetter},          {"DSN", true, After::kNoLetter},
    {"SIG", true, After::kNoLetter},          {"PW", true, After::kNoLetter},  // --pw, DB_PW; not PWR
};

// "dbPassword", "db-password" and "DB_PASSWORD" all become "DB_PASSWORD": upper case, '_' for any
// other character and at every lower-to-upper change, so that keywords can be matched at word edges.
std::string normalize_name(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (i > 0 && std::isupper(c) && std::islower(static_cast<unsigned char>(name[i - 1]))) out += '_';
    out += std::isalnum(c) ? static_cast<char>(std::toupper(c)) : '_';
  }
  return out;
}

bool keyword_fits(const std::string& name, size_t pos, const Keyword& k) {
  if (k.word_start && pos > 0 && is_alpha(name[pos - 1])) return false;
  const size_t end = pos + k.word.size();
  switch (k.after) {
    case After::kAnything: return true;
    case After::kNoLetter: return end == name.size() || !is_alpha(name[end]);
    case After::kNameEnd:
      return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(end), name.end(),
                         [](char c) { return c == '_' || std::isdigit(static_cast<unsigned char>(c)); });
  }
  return false;
}

// Parts of a string to replace with kRedacted, as [begin, end) offsets.
struct Span {
  size_t begin, end;
};

std::string replace_spans(std::string_view s, std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::string out;
  size_t copied = 0;
  for (size_t i = 0; i < spans.size();) {
    const size_t begin = spans[i].begin;
    size_t end = spans[i].end;
    for (++i; i < spans.size() && spans[i].begin <= end; ++i) end = std::max(end, spans[i].end);  // overlaps
    out.append(s.substr(copied, begin - copied));
    out.append(kRedacted);
    copied = end;
  }
  out.append(s.substr(copied));
  return out;
}

// -----BEGIN ... PRIVATE KEY----- <body> -----END ...: the body.
void private_key_spans(std::string_view s, std::vector<Span>& spans) {
  for (size_t begin = s.find("-----BEGIN "); begin != std::string_view::npos;
       begin = s.find("-----BEGIN ", begin + 1)) {
    size_t header_end = s.find("-----", begin + 11);
    if (header_end == std::string_view::npos) return;
    header_end += 5;
    if (s.substr(begin, header_end - begin).find("PRIVATE KEY") == std::string_view::npos) continue;
    const size_t end = std::min(s.find("-----END", header_end), s.size());
    if (end > header_end) spans.push_back({header_end, end});
  }
}

bool contains_hook(std::string_view s) {
  std::string lower(s);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("hook") != std::string::npos;
}

// A bot's token as a path segment ("/bot123456:AAH-x/sendMessage", Telegram's API): where the
// secret after the bot's id starts, or npos.
size_t bot_token_at(std::string_view segment) {
  if (!segment.starts_with("bot")) return std::string_view::npos;
  size_t digits = 3;
  while (digits < segment.size() && std::isdigit(static_cast<unsigned char>(segment[digits]))) ++digits;
  if (digits == 3 || digits + 1 >= segment.size() || segment[digits] != ':') return std::string_view::npos;
  return digits + 1;
}

// One "scheme://authority/path" whose "://" is at `sep`: the userinfo's password (or the whole
// userinfo when it has no ':', as a token or a DSN key), and the token part of webhook paths: the
// whole path when the host names a hook ("hooks.slack.com/<redacted>"), else what follows the first
// path segment that does (".../api/webhooks/<redacted>").
void url_spans(std::string_view s, size_t sep, std::vector<Span>& spans) {
  const size_t authority = sep + 3;
  size_t end = authority;
  while (end < s.size() && s[end] != '/' && s[end] != '?' && s[end] != '#' && !is_space(s[end])) ++end;
  size_t host = authority;
  // The last '@': a password with an unencoded '@' in it is still hidden whole.
  if (size_t at = s.substr(authority, end - authority).rfind('@'); at != std::string_view::npos) {
    host = authority + at + 1;
    const size_t colon = s.substr(authority, at).find(':');
    const size_t secret = colon == std::string_view::npos ? authority : authority + colon + 1;
    if (secret < host - 1) spans.push_back({secret, host - 1});
  }
  if (end == s.size() || s[end] != '/') return;
  size_t path_end = end;
  while (path_end < s.size() && s[path_end] != '?' && s[path_end] != '#' && !is_space(s[path_end])) ++path_end;
  if (contains_hook(s.substr(host, end - host))) {
    if (end + 1 < path_end) spans.push_back({end + 1, path_end});
    return;
  }
  for (size_t seg = end + 1; seg < path_end;) {
    const size_t seg_end = std::min(s.find('/', seg), path_end);
    if (const size_t token = bot_token_at(s.substr(seg, seg_end - seg)); token != std::string_view::npos) {
      spans.push_back({seg + token, seg_end});
    }
    if (contains_hook(s.substr(seg, seg_end - seg))) {
      if (seg_end + 1 < path_end) spans.push_back({seg_end + 1, path_end});
      return;
    }
    seg = seg_end + 1;
  }
}

void url_spans(std::string_view s, std::vector<Span>& spans) {
  for (size_t sep = s.find("://"); sep != std::string_view::npos; sep = s.find("://", sep + 3)) {
    if (sep > 0 && is_alnum(s[sep - 1])) url_spans(s, sep, spans);
  }
}

// NAME=VALUE with a secret NAME anywhere in the text (query strings "?access_token=...&",
// connection strings "AccountKey=...;", "--password=..." inside a longer value), and the spaced
// form of configuration files ("aws_secret_access_key = VALUE"): VALUE, up to the next '&', ';' or
// blank.
void assignment_spans(std::string_view s, std::vector<Span>& spans) {
  for (size_t eq = s.find('='); eq != std::string_view::npos; eq = s.find('=', eq + 1)) {
    size_t name_end = eq;
    while (name_end > 0 && is_blank(s[name_end - 1])) --name_end;
    size_t name = name_end;
    while (name > 0 && is_name_char(s[name - 1])) --name;
    if (name == name_end || !is_secret_name(s.substr(name, name_end - name))) continue;
    size_t value = eq + 1;
    // Blanks after '=' only in the spaced form: in "--password= --user=x" the value is empty.
    if (name_end < eq) {
      while (value < s.size() && is_blank(s[value])) ++value;
    }
    size_t end = value;
    while (end < s.size() && s[end] != '&' && s[end] != ';' && !is_space(s[end])) ++end;
    if (end > value) spans.push_back({value, end});
    eq = std::max(end, eq + 1) - 1;
  }
}

// "Authorization: Bearer x", "X-Api-Key: abc", "password: x" (a header or YAML line; the blank
// after ':' tells it from "host:port" and "scheme:"): the rest of the line. "\"password\": \"x\""
// (JSON): the quoted string.
void colon_spans(std::string_view s, std::vector<Span>& spans) {
  for (size_t colon = s.find(':'); colon != std::string_view::npos; colon = s.find(':', colon + 1)) {
    size_t name_end = colon;
    const bool quoted = name_end > 0 && s[name_end - 1] == '"';
    if (quoted) --name_end;
    size_t name = name_end;
    while (name > 0 && is_name_char(s[name - 1])) --name;
    if (quoted && (name == 0 || s[name - 1] != '"')) continue;
    if (name == name_end || !is_secret_name(s.substr(name, name_end - name))) continue;
    size_t value = colon + 1;
    while (value < s.size() && is_blank(s[value])) ++value;
    size_t end = value;
    if (quoted) {
      if (value == s.size() || s[value] != '"') continue;  // a number or an object: no string to hide
      end = ++value;
      while (end < s.size() && s[end] != '"') end += s[end] == '\\' ? 2 : 1;
      end = std::min(end, s.size());
    } else {
      if (value == colon + 1) continue;
      while (end < s.size() && s[end] != '\n' && s[end] != '\r') ++end;
    }
    if (end > value) spans.push_back({value, end});
  }
}

// Words that are a password's name on their own, as a command takes them ("mysqladmin password
// VALUE"): PASSWORD, PASSWD, PASSPHRASE, PW in any case. Other secret names are taken bare only as
// options ("--token VALUE"): "kubectl create secret generic" names no value.
bool is_password_word(std::string_view word) {
  const std::string n = normalize_name(word);
  return n == "PASSWORD" || n == "PASSWD" || n == "PASSPHRASE" || n == "PW";
}

// "--pw VALUE" and "password VALUE" inside one value (a command line kept in a variable, `sh -c`'s
// argument): the next word on the line, unless it starts with '-' (then the option was a flag).
// As on a command line, a single-letter option ("-p 8080") is never taken for a secret.
void spaced_option_spans(std::string_view s, std::vector<Span>& spans) {
  for (size_t word = 0; word < s.size();) {
    if (is_space(s[word])) {
      ++word;
      continue;
    }
    size_t word_end = word;
    while (word_end < s.size() && !is_space(s[word_end])) ++word_end;
    const std::string_view w = s.substr(word, word_end - word);
    const size_t dashes = std::min(w.find_first_not_of('-'), w.size());
    const bool option = dashes > 0 && w.size() - dashes >= 2 && is_name(w) && is_secret_name(w);
    size_t value = word_end;
    while (value < s.size() && is_blank(s[value])) ++value;
    word = value;
    if (!(option || (dashes == 0 && is_password_word(w))) || value == word_end || value == s.size() ||
        is_space(s[value]) || s[value] == '-') {
      continue;
    }
    size_t end = value;
    while (end < s.size() && !is_space(s[end])) ++end;
    spans.push_back({value, end});
    word = end;
  }
}

// Tokens recognizable by their prefix: the prefix stays (it says what kind of secret it was), the
// body goes. A body is letters, digits and `extra`, at least `min_body` of them. An access key id
// (`paired`) is half of a pair whose secret follows it after a ':' or blanks, as key files and
// commands write them ("AKIA...:SECRET", "GOOG1... SECRET"): that word goes too.
struct TokenShape {
  std::string_view prefix;
  std::string_view extra;
  size_t min_body;
  bool paired = false;
};
constexpr TokenShape kTokenShapes[] = {
    {"ghp_", "", 20},         {"gho_", "", 20},         {"ghu_", "", 20},         {"ghs_", "", 20},
    {"ghr_", "", 20},         {"github_pat_", "_", 20}, {"glpat-", "_-", 20},     {"xoxb-", "-", 10},
    {"xoxp-", "-", 10},       {"xoxa-", "-", 10},       {"xoxe-", "-", 10},       {"xoxs-", "-", 10},
    {"xapp-", "-", 10},       {"sk-", "_-", 20},        {"sk_live_", "", 16},     {"sk_test_", "", 16},
    {"rk_live_", "", 16},     {"rk_test_", "", 16},     {"AKIA", "", 16, true},   {"ASIA", "", 16, true},
    {"GOOG1", "", 20, true},  // a Cloud Storage HMAC key's access id
    {"hf_", "", 30},          {"npm_", "", 30},         {"pypi-", "_-", 50},      {"AIza", "_-", 30},
    {"ya29.", "_.-", 20},     {"eyJ", "_.-=", 20},  // a JWT: base64url JSON
    {"Bearer ", "-._~+/=_", 8}, {"bearer ", "-._~+/=_", 8}, {"BEARER ", "-._~+/=_", 8},
};

// The secret word after an access key id that ends at `at`, when one follows a ':' or blanks:
// base64 and URL-safe characters. Returns where scanning goes on.
size_t paired_secret(std::string_view s, size_t at, std::vector<Span>& spans) {
  size_t word = at;
  if (word < s.size() && s[word] == ':') {
    ++word;
  } else {
    while (word < s.size() && is_blank(s[word])) ++word;
    if (word == at) return at;
  }
  size_t end = word;
  while (end < s.size() && (is_alnum(s[end]) || std::string_view("/+=_-.").find(s[end]) != std::string_view::npos)) ++end;
  if (end == word) return at;
  spans.push_back({word, end});
  return end;
}

void token_spans(std::string_view s, std::vector<Span>& spans) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (is_alnum(s[i - 1]) || s[i - 1] == '_')) continue;  // a prefix starts a word
    for (const auto& t : kTokenShapes) {
      if (s.substr(i, t.prefix.size()) != t.prefix) continue;
      const size_t body = i + t.prefix.size();
      size_t end = body;
      while (end < s.size() && (is_alnum(s[end]) || t.extra.find(s[end]) != std::string_view::npos)) ++end;
      if (end - body < t.min_body) continue;
      spans.push_back({body, end});
      if (t.paired) end = paired_secret(s, end, spans);
      i = end - 1;
      break;
    }
  }
}

using SpanFinder = void (*)(std::string_view, std::vector<Span>&);

// One finder at a time, each on the previous one's output, so no finder sees a secret another has
// already cut out, nor half of one.
std::string apply(std::string text, SpanFinder find) {
  std::vector<Span> spans;
  find(text, spans);
  return spans.empty() ? text : replace_spans(text, std::move(spans));
}

}  // namespace

bool is_secret_name(std::string_view name) {
  if (name == "PWD") return false;  // the shell's working directory (OLDPWD never matches PWD)
  const std::string n = normalize_name(name);
  for (const auto& k : kSecretKeywords) {
    for (size_t pos = n.find(k.word); pos != std::string::npos; pos = n.find(k.word, pos + 1)) {
      if (keyword_fits(n, pos, k)) return true;
    }
  }
  return false;
}

std::string redact_text(std::string_view text) {
  std::string s(text);
  for (SpanFinder find :
       {private_key_spans, url_spans, assignment_spans, colon_spans, spaced_option_spans, token_spans}) {
    s = apply(std::move(s), find);
  }
  return s;
}

std::string redact_env_value(std::string_view name, std::string_view value) {
  if (value.empty()) return {};
  return is_secret_name(name) ? std::string(kRedacted) : redact_text(value);
}

std::vector<std::string> redact_argv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  bool value_follows = false;  // the previous argument was a secret option without "=value"
  for (const std::string& a : argv) {
    // A next argument that starts with '-' is taken for the next option: "--use-auth-token --fp16".
    if (value_follows && !a.empty() && a[0] != '-') {
      out.emplace_back(kRedacted);
      value_follows = false;
      continue;
    }
    const size_t eq = a.find('=');
    const std::string_view name = std::string_view(a).substr(0, eq);
    if (eq != std::string::npos && is_name(name) && is_secret_name(name)) {
      // The whole rest of the argument: the shell kept it as one word, blanks included.
      out.push_back(a.substr(0, eq + 1) + (eq + 1 < a.size() ? std::string(kRedacted) : ""));
      value_follows = false;
      continue;
    }
    // "--token" or "-token", never a single letter ("-p"); or a password's name on its own
    // ("mysqladmin password VALUE").
    const size_t dashes = std::min(a.find_first_not_of('-'), a.size());
    value_follows = eq == std::string::npos && is_name(name) &&
                    ((dashes > 0 && a.size() - dashes >= 2 && is_secret_name(name)) ||
                     (dashes == 0 && is_password_word(name)));
    out.push_back(redact_text(a));
  }
  return out;
}

}  // namespace gmp
