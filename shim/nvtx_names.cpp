#include "nvtx_names.h"

#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include "utf8.h"

namespace gmp::shim::nvtx {
namespace {

// Handle -> name, for domains and registered strings. Names are never freed (a re-created handle
// just points to a new name), so a reader may use the pointer after unlocking.
struct NameMaps {
  std::shared_mutex mutex;
  std::unordered_map<const void*, const char*> domains;
  struct PairHash {
    size_t operator()(const std::pair<const void*, const void*>& p) const {
      return std::hash<const void*>()(p.first) * 31u ^ std::hash<const void*>()(p.second);
    }
  };
  std::unordered_map<std::pair<const void*, const void*>, const char*, PairHash> strings;  // (domain, handle)
  // Our own handles when no chained tool issues them: one per distinct name (per domain).
  std::unordered_map<std::string, const char*> own_domains;
  std::unordered_map<std::string, const char*> own_strings;  // key: domain pointer bytes + text
};

NameMaps& names() {
  static NameMaps* maps = new NameMaps;  // never destroyed: NVTX calls may come during exit
  return *maps;
}

const char* intern_copy(const std::string& s) {
  char* p = new char[s.size() + 1];
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

const char* domain_name(nvtxDomainHandle_t domain) {
  if (domain == nullptr) return nullptr;  // the default domain
  NameMaps& m = names();
  std::shared_lock lock(m.mutex);
  auto it = m.domains.find(domain);
  return it != m.domains.end() ? it->second : nullptr;
}

const char* registered_string(nvtxDomainHandle_t domain, nvtxStringHandle_t handle) {
  if (handle == nullptr) return nullptr;
  NameMaps& m = names();
  std::shared_lock lock(m.mutex);
  auto it = m.strings.find({domain, handle});
  return it != m.strings.end() ? it->second : nullptr;
}

// Appends `s` to buf[*o] (truncating; buf holds kNameBytes).
void append(char* buf, size_t* o, const char* s) {
  const size_t room = kNameBytes - 1 - *o;
  const size_t n = strnlen(s, room);
  std::memcpy(buf + *o, s, n);
  *o += n;
  buf[*o] = '\0';
}

}  // namespace

nvtxDomainHandle_t create_domain(const std::string& name, bool chained, nvtxDomainHandle_t theirs) {
  NameMaps& m = names();
  std::unique_lock lock(m.mutex);
  if (chained) {
    if (theirs != nullptr) m.domains[theirs] = intern_copy(name);
    return theirs;
  }
  const char*& own = m.own_domains[name];
  if (own == nullptr) own = intern_copy(name);
  m.domains[own] = own;
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(own));
}

nvtxStringHandle_t register_string(nvtxDomainHandle_t domain, const std::string& text, bool chained,
                                   nvtxStringHandle_t theirs) {
  NameMaps& m = names();
  std::unique_lock lock(m.mutex);
  if (chained) {
    if (theirs != nullptr) m.strings[{domain, theirs}] = intern_copy(text);
    return theirs;
  }
  std::string key(reinterpret_cast<const char*>(&domain), sizeof domain);
  key += text;
  const char*& own = m.own_strings[key];
  if (own == nullptr) own = intern_copy(text);
  m.strings[{domain, own}] = own;
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(own));
}

const char* attribute_name(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a, char* buf) {
  const char* message = nullptr;
  const wchar_t* wide = nullptr;
  if (a != nullptr && a->size >= offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) {
    switch (a->messageType) {
      case NVTX_MESSAGE_TYPE_ASCII: message = a->message.ascii; break;
      case NVTX_MESSAGE_TYPE_UNICODE: wide = a->message.unicode; break;
      case NVTX_MESSAGE_TYPE_REGISTERED: message = registered_string(domain, a->message.registered); break;
      default: break;
    }
  }
  if (message == nullptr && wide == nullptr) message = kUnnamed;
  const char* d = domain_name(domain);
  if ((d == nullptr || *d == '\0') && message != nullptr) return message;
  size_t o = 0;
  buf[0] = '\0';
  if (d != nullptr && *d != '\0') {
    append(buf, &o, d);
    append(buf, &o, "::");
  }
  if (message != nullptr) append(buf, &o, message);
  else utf8::from_wide(wide, buf + o, kNameBytes - o);
  return buf;
}

std::string wide_name(const wchar_t* w) {
  char buf[kNameBytes];
  const char* s = utf8::from_wide(w, buf, sizeof buf);
  return s != nullptr ? s : "";
}

}  // namespace gmp::shim::nvtx
