/* SimGrid's configuration as text, for netlaws.c: SimGrid's C API reads numbers and
 * booleans only, and the per-message laws (smpi/os, smpi/lat-factor, ...) are strings; and
 * SimGrid's factor callbacks, which only its C++ API has. The runtime's one C++ file;
 * everything else stays C. */
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <xbt/config.hpp>

#include "simgrid_config.h"

#include <cstdio>
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

int hplsim_set_factor_callbacks(const void* laws, double (*factor)(const void* laws, int latency, int loopback,
                                                                   double bytes),
                                char* err, unsigned long size)
{
  try {
    auto* model = simgrid::s4u::Engine::get_instance()->get_netzone_root()->get_network_model();
    model->set_lat_factor_cb([laws, factor](double bytes, const simgrid::s4u::Host* src,
                                            const simgrid::s4u::Host* dst, const std::vector<simgrid::s4u::Link*>&,
                                            const std::unordered_set<simgrid::s4u::NetZone*>&) {
      return factor(laws, 1, src == dst, bytes);
    });
    model->set_bw_factor_cb([laws, factor](double bytes, const simgrid::s4u::Host* src,
                                           const simgrid::s4u::Host* dst, const std::vector<simgrid::s4u::Link*>&,
                                           const std::unordered_set<simgrid::s4u::NetZone*>&) {
      return factor(laws, 0, src == dst, bytes);
    });
    return 0;
  } catch (std::exception const& e) {
    std::snprintf(err, size, "%s", e.what());
    return -1;
  }
}
