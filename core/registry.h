// Components registered by name, with a one-line description and a parameter schema.
//
// Registration is explicit — a `register_*` function per folder, called by the composition root — so
// there is no static-initialization order to get wrong and no global state.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/params.h"

namespace bagua {

template <class T, class... Args>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<T>(const Params&, Args...)>;
  struct Entry {
    std::string name;
    std::string description;
    ParamSchema schema;
    Factory factory;
  };

  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  void add(std::string name, std::string description, ParamSchema schema, Factory factory) {
    BAGUA_CHECK(!entries_.count(name), kind_ + " '" + name + "' registered twice");
    std::string key = name;
    entries_.emplace(std::move(key), Entry{std::move(name), std::move(description), std::move(schema),
                                           std::move(factory)});
  }

  const Entry* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }
  // Throws ConfigError listing the known names when `name` is unknown.
  const Entry& at(const std::string& name) const {
    if (const Entry* e = find(name)) return *e;
    std::string known;
    for (const auto& [n, e] : entries_)
      known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("unknown " + kind_ + " '" + name + "' (known: " + known + ")");
  }
  std::unique_ptr<T> create(const std::string& name, const Params& params, Args... args) const {
    return at(name).factory(params, std::forward<Args>(args)...);
  }
  std::vector<const Entry*> entries() const {
    std::vector<const Entry*> out;
    for (const auto& [n, e] : entries_)
      out.push_back(&e);
    return out;
  }
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::map<std::string, Entry> entries_;
};

}  // namespace bagua
