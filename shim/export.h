#pragma once
// Only names listed in exports.map leave the shim; this marks their definitions.
#define GMP_EXPORT extern "C" __attribute__((visibility("default")))
