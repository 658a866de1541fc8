/* SimGrid's configuration as text, for netlaws.c: SimGrid's C API reads numbers and
 * booleans only, and the per-message laws (smpi/os, smpi/lat-factor, ...) are strings; and
 * SimGrid's factor callbacks, which only its C++ API has. The runtime's one C++ file;
 * everything else stays C. */
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <xbt/config.hpp>

#include "simgrid_config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <exception>
#include <string>
#include <unordered_map>
#include <vector>

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

long hplsim_host_position(const_sg_host_t host)
{
  /* SimGrid numbers netpoints as it creates them, and a cluster creates its hosts in its
   * radical's order: the rank of a host's number among all hosts' is its place there. */
  static std::unordered_map<const simgrid::s4u::Host*, long> position;
  if (position.empty()) {
    auto hosts = simgrid::s4u::Engine::get_instance()->get_all_hosts();
    std::sort(hosts.begin(), hosts.end(), [](const simgrid::s4u::Host* a, const simgrid::s4u::Host* b) {
      return a->get_netpoint()->id() < b->get_netpoint()->id();
    });
    for (size_t i = 0; i < hosts.size(); i++)
      position[hosts[i]] = static_cast<long>(i);
  }
  auto found = position.find(host);
  return found == position.end() ? -1 : found->second;
}

int hplsim_set_factor_callbacks(const void* laws,
                                double (*factor)(const void* laws, int latency, const_sg_host_t src,
                                                 const_sg_host_t dst, double bytes),
                                char* err, unsigned long size)
{
  try {
    auto* model = simgrid::s4u::Engine::get_instance()->get_netzone_root()->get_network_model();
    model->set_lat_factor_cb([laws, factor](double bytes, const simgrid::s4u::Host* src,
                                            const simgrid::s4u::Host* dst, const std::vector<simgrid::s4u::Link*>&,
                                            const std::unordered_set<simgrid::s4u::NetZone*>&) {
      return factor(laws, 1, src, dst, bytes);
    });
    model->set_bw_factor_cb([laws, factor](double bytes, const simgrid::s4u::Host* src,
                                           const simgrid::s4u::Host* dst, const std::vector<simgrid::s4u::Link*>&,
                                           const std::unordered_set<simgrid::s4u::NetZone*>&) {
      return factor(laws, 0, src, dst, bytes);
    });
    return 0;
  } catch (std::exception const& e) {
    std::snprintf(err, size, "%s", e.what());
    return -1;
  }
}
