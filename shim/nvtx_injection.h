// The shim's two NVTX entry points (nvtx_injection.cpp), exported through exports.map.
#pragma once

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "export.h"

GMP_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);
GMP_EXPORT int InitializeInjectionNvtxExtension(void* module_info);
