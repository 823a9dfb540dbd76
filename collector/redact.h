// Removing credentials from the strings we copy out of the profiled process (its argv and
// environment) before they reach any file: pure functions, no I/O. The rules, with examples, are in
// docs/oom-bundles.md ("What is redacted"). A redacted secret becomes "<redacted>"; an empty value
// stays empty (there is nothing to hide).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gmp {

inline constexpr std::string_view kRedacted = "<redacted>";

// True when a variable, option or parameter name suggests that its value is a secret
// ("HF_TOKEN", "--db-password", "AccountKey", "sig"); never for PATH, PWD, OLDPWD and the like.
bool is_secret_name(std::string_view name);

// `text` with every credential found inside it replaced: URL userinfo, tokens in webhook and bot
// URL paths, secret-named NAME=VALUE pairs (query strings, connection strings, "name = value"),
// "Name: value" header lines, "--secret VALUE" and "password VALUE", PEM private keys and tokens of
// well-known formats (ghp_..., xoxb-..., AKIA..., Bearer ...) with the secret of a key pair after them.
std::string redact_text(std::string_view text);

// The value of environment variable `name`: "<redacted>" when the name is secret, else redact_text.
std::string redact_env_value(std::string_view name, std::string_view value);

// A command line with "--secret=value", "--secret value", "SECRET=value" and, in every argument,
// what redact_text finds, replaced. Single-letter options ("-p x") are left alone: the letter means
// a password to few programs and a port, pid or prefix to most.
std::vector<std::string> redact_argv(const std::vector<std::string>& argv);

}  // namespace gmp
