/* SimGrid's configuration as text, for netlaws.c: SimGrid's C API reads numbers and
 * booleans only, and the per-message laws (smpi/os, smpi/lat-factor, ...) are strings. The
 * runtime's one C++ file; everything else stays C. */
#include <xbt/config.hpp>

#include "simgrid_config.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

int hplsim_config_text(const char* name, char* out, unsigned long size)
{
  try {
    std::string const& value = simgrid::config::get_value<std::string>(name);
    if (value.size() + 1 > size)
      return -1;
    std::memcpy(out, value.c_str(), value.size() + 1);
    return 0;
  } catch (std::exception const&) {
    return -1;
  }
}

int hplsim_ranks_take_turns(void)
{
  char threads[32];
  return !(hplsim_config_text("contexts/nthreads", threads, sizeof threads) == 0 && std::atoi(threads) > 1);
}
