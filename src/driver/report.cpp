// The availability report: PREFIX_error_report.csv, .json and .xlsx.
#include "npuc/model.hpp"

#include "support/error.hpp"
#include "support/file.hpp"

#include <nlohmann/json.hpp>
#include <xlsxwriter.h>

#include <unistd.h>

namespace npuc {

namespace {

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string r = "\"";
  for (char c : s) r += c == '"' ? std::string("\"\"") : std::string(1, c);
  return r + "\"";
}

/// The manual's `message` column (§7.6, "Error detail"): the rule and what the node has.
std::string message(const CheckRow& r) {
  std::string m = r.rule;
  if (!r.actual.empty()) m += " (actual: " + r.actual + ")";
  return m;
}

void writeXlsx(const std::vector<CheckRow>& rows, const std::filesystem::path& path) {
  auto tmp = uniqueSibling(path, "tmp");
  lxw_workbook_options opts = {};
  opts.constant_memory = LXW_FALSE;
  lxw_workbook* wb = workbook_new_opt(tmp.c_str(), &opts);
  if (!wb) fail(ErrorCode::kIo, "{}: cannot create the workbook", path.string());
  // Fixed document properties: the same report gives the same bytes.
  lxw_doc_properties props = {};
  char title[] = "npuc availability report";
  props.title = title;
  props.created = 946684800;  // 2000-01-01: also used for the zip entries, so the file is reproducible
  workbook_set_properties(wb, &props);
  lxw_worksheet* ws = workbook_add_worksheet(wb, "errors");
  lxw_format* bold = workbook_add_format(wb);
  format_set_bold(bold);
  // The manual's columns (§7.6: node_idx, name, op_type, message), then npuc's.
  const char* head[] = {"node_idx", "name", "op_type", "message", "rule_id", "rule", "actual", "fix"};
  for (int c = 0; c < 8; ++c) worksheet_write_string(ws, 0, static_cast<lxw_col_t>(c), head[c], bold);
  for (size_t i = 0; i < rows.size(); ++i) {
    auto r = static_cast<lxw_row_t>(i + 1);
    const CheckRow& row = rows[i];
    worksheet_write_number(ws, r, 0, row.index, nullptr);
    const std::string msg = message(row);
    const std::string* cols[] = {&row.node, &row.op, &msg, &row.rule_id, &row.rule, &row.actual, &row.fix};
    for (int c = 0; c < 7; ++c) worksheet_write_string(ws, r, static_cast<lxw_col_t>(c + 1), cols[c]->c_str(), nullptr);
  }
  worksheet_set_column(ws, 1, 1, 30, nullptr);
  worksheet_set_column(ws, 3, 3, 80, nullptr);
  worksheet_set_column(ws, 5, 6, 60, nullptr);
  lxw_error err = workbook_close(wb);
  std::error_code ec;
  if (err != LXW_NO_ERROR) {
    std::filesystem::remove(tmp, ec);
    fail(ErrorCode::kIo, "{}: cannot write the workbook: {}", path.string(), lxw_strerror(err));
  }
  try {
    syncFile(tmp);
  } catch (...) {
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail(ErrorCode::kIo, "{}: cannot rename into place: {}", path.string(), ec.message());
}

}  // namespace

void makeOutputFolder(const std::filesystem::path& dir, const char* what) { makeFolder(dir, what); }
void checkOutputName(const std::string& name, const char* what) { checkPlainName(name, what); }

std::vector<std::string> writeCheckReport(const std::vector<CheckRow>& rows, const std::string& target,
                                          const std::string& model, const std::filesystem::path& prefix) {
  checkPlainName(prefix.filename().string(), "report prefix");
  makeFolder(prefix.has_parent_path() ? prefix.parent_path() : ".", "report folder");
  std::vector<std::string> files;
  std::string base = prefix.string() + "_error_report";
  std::string csv = "node_idx,name,op_type,message,rule_id,rule,actual,fix\n";
  for (auto& r : rows)
    csv += std::to_string(r.index) + "," + csvField(r.node) + "," + csvField(r.op) + "," + csvField(message(r)) + "," +
           csvField(r.rule_id) + "," + csvField(r.rule) + "," + csvField(r.actual) + "," + csvField(r.fix) + "\n";
  writeFileAtomic(base + ".csv", csv);
  files.push_back(base + ".csv");
  nlohmann::ordered_json j;
  j["model"] = model;
  j["target"] = target;
  j["supported"] = rows.empty();
  j["errors"] = nlohmann::ordered_json::array();
  for (auto& r : rows)
    j["errors"].push_back({{"node_idx", r.index}, {"name", r.node}, {"op_type", r.op}, {"message", message(r)},
                           {"rule_id", r.rule_id}, {"rule", r.rule}, {"actual", r.actual}, {"fix", r.fix}});
  writeFileAtomic(base + ".json", j.dump(2) + "\n");
  files.push_back(base + ".json");
  writeXlsx(rows, base + ".xlsx");
  files.push_back(base + ".xlsx");
  return files;
}

void writeQuantizeTable(const QuantizeReport& r, const std::filesystem::path& csv) {
  auto quote = [](const std::string& v) {
    if (v.find_first_of(",\"\n") == std::string::npos) return v;
    std::string q = "\"";
    for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string s = "name,kind,lo,hi,scale,zero_point,channels,snr_db,saturated,warning\n";
  for (auto& t : r.tensors) {
    const bool act = t.kind == "activation";
    s += fmt::format("{},{},{:.9g},{:.9g},{:.9g},{},{},{},{},{}\n", quote(t.name), t.kind, t.lo, t.hi, t.scale, t.zero_point,
                     t.channels, act ? fmt::format("{:.3f}", t.snr_db) : "", act ? fmt::format("{:.6f}", t.saturated) : "",
                     quote(t.warning));
  }
  writeFileAtomic(csv, s);
}

}  // namespace npuc
