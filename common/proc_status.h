// A field of /proc/<pid>/status in bytes ("VmRSS:   1234 kB" → 1263616): the memory figures the
// benchmarks report (VmRSS, VmHWM, RssAnon, ...).
#ifndef SEMMOE_COMMON_PROC_STATUS_H_
#define SEMMOE_COMMON_PROC_STATUS_H_

#include <cstdint>
#include <string>

namespace semmoe {

// −1 when the process or the field is not there (or the value is not a number of kB). pid 0: this
// process.
int64_t ProcStatusBytes(const std::string& field, int pid = 0);

}  // namespace semmoe

#endif  // SEMMOE_COMMON_PROC_STATUS_H_
