// The availability report: PREFIX_error_report.csv, .json and .xlsx.
#include "npuc/model.hpp"

#include "support/error.hpp"
#include "support/file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xlsxwriter.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include <unistd.h>

namespace npuc {

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string r = "\"";
  for (char c : s) r += c == '"' ? std::string("\"\"") : std::string(1, c);
  return r + "\"";
}

namespace {

/// A workbook written beside `path` (renamed into place by closeWorkbook), with fixed document properties: the same
/// content gives the same bytes. `tmp` receives the temporary file's name.
lxw_workbook* openWorkbook(const std::filesystem::path& path, const char* title, std::filesystem::path& tmp) {
  tmp = uniqueSibling(path, "tmp");
  lxw_workbook_options opts = {};
  opts.constant_memory = LXW_FALSE;
  lxw_workbook* wb = workbook_new_opt(tmp.c_str(), &opts);
  if (!wb) fail(ErrorCode::kIo, "{}: cannot create the workbook", path.string());
  lxw_doc_properties props = {};
  std::string t = title;
  props.title = t.data();
  props.created = 946684800;  // 2000-01-01: also used for the zip entries, so the file is reproducible
  workbook_set_properties(wb, &props);
  return wb;
}

/// Closes the workbook, syncs it and renames it into place; nothing is left behind on failure.
void closeWorkbook(lxw_workbook* wb, const std::filesystem::path& tmp, const std::filesystem::path& path) {
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
  if (ec) {
    std::filesystem::remove(tmp, ec);
    fail(ErrorCode::kIo, "{}: cannot rename into place: {}", path.string(), ec.message());
  }
}

/// The manual's `message` column (§7.6, "Error detail"): the rule and what the node has.
std::string message(const CheckRow& r) {
  std::string m = r.rule;
  if (!r.actual.empty()) m += " (actual: " + r.actual + ")";
  return m;
}

void writeXlsx(const std::vector<CheckRow>& rows, const std::filesystem::path& path) {
  std::filesystem::path tmp;
  lxw_workbook* wb = openWorkbook(path, "npuc availability report", tmp);
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
  closeWorkbook(wb, tmp, path);
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

namespace {

std::string quantCsv(const QuantizeReport& r) {
  std::string s = "name,kind,lo,hi,scale,zero_point,channels,snr_db,saturated,warning,note\n";
  for (auto& t : r.tensors) {
    const bool act = t.kind == "activation";
    s += fmt::format("{},{},{:.9g},{:.9g},{:.9g},{},{},{},{},{},{}\n", csvField(t.name), t.kind, t.lo, t.hi, t.scale, t.zero_point,
                     t.channels, act ? fmt::format("{:.3f}", t.snr_db) : "", act ? fmt::format("{:.6f}", t.saturated) : "",
                     csvField(t.warning), csvField(t.note));
  }
  return s;
}

std::string htmlText(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else o += c;
  }
  return o;
}

/// One self-contained page: the table, rows with a warning highlighted, each activation's SNR as a bar.
std::string quantHtml(const QuantizeReport& r) {
  double top = 60;
  for (auto& t : r.tensors)
    if (t.kind == "activation" && std::isfinite(t.snr_db)) top = std::max(top, t.snr_db);
  std::string rows;
  for (auto& t : r.tensors) {
    const bool act = t.kind == "activation";
    const double w = act && std::isfinite(t.snr_db) ? std::clamp(t.snr_db / top, 0.0, 1.0) * 120 : 0;
    rows += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{:.6g}</td><td>{:.6g}</td><td>{:.6g}</td><td>{}</td><td>{}</td><td>{}</td>"
                        "<td>{}</td><td>{}</td><td>{}</td></tr>\n",
                        t.warning.empty() ? "" : " class='warn'", htmlText(t.name), t.kind, t.lo, t.hi, t.scale, t.zero_point, t.channels,
                        act ? fmt::format("<svg width='122' height='10'><rect width='{:.1f}' height='10' fill='#1f77b4'/></svg> {:.1f}",
                                          w, t.snr_db)
                            : std::string(),
                        act ? fmt::format("{:.4f} %", 100 * t.saturated) : std::string(), htmlText(t.warning), htmlText(t.note));
  }
  std::string warnings;
  for (auto& w : r.warnings) warnings += "<li>" + htmlText(w) + "</li>\n";
  return fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>npuc quantization table</title><style>body{{font-family:sans-serif;"
      "margin:16px}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;font-size:12px}}"
      "tr.warn{{background:#fdd}}</style></head><body>\n<h1>npuc quantization table</h1>\n<p>{} tensors, {} calibration "
      "samples. SNR: the float tensor against its quantized copy in the quantized model (dB); saturated: the calibration "
      "values outside the range.</p>\n<ul>{}</ul>\n<table><tr><th>tensor</th><th>kind</th><th>lo</th><th>hi</th><th>scale</th>"
      "<th>zero point</th><th>channels</th><th>SNR dB</th><th>saturated</th><th>warning</th><th>note</th></tr>\n{}</table>\n</body></html>\n",
      r.tensors.size(), r.samples, warnings, rows);
}

void quantXlsx(const QuantizeReport& r, const std::filesystem::path& path) {
  std::filesystem::path tmp;
  lxw_workbook* wb = openWorkbook(path, "npuc quantization table", tmp);
  lxw_worksheet* ws = workbook_add_worksheet(wb, "quantization");
  lxw_format* bold = workbook_add_format(wb);
  format_set_bold(bold);
  const char* head[] = {"name", "kind", "lo", "hi", "scale", "zero_point", "channels", "snr_db", "saturated", "warning", "note"};
  for (int c = 0; c < 11; ++c) worksheet_write_string(ws, 0, static_cast<lxw_col_t>(c), head[c], bold);
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    const auto& t = r.tensors[i];
    auto row = static_cast<lxw_row_t>(i + 1);
    worksheet_write_string(ws, row, 0, t.name.c_str(), nullptr);
    worksheet_write_string(ws, row, 1, t.kind.c_str(), nullptr);
    worksheet_write_number(ws, row, 2, t.lo, nullptr);
    worksheet_write_number(ws, row, 3, t.hi, nullptr);
    worksheet_write_number(ws, row, 4, t.scale, nullptr);
    worksheet_write_number(ws, row, 5, t.zero_point, nullptr);
    worksheet_write_number(ws, row, 6, static_cast<double>(t.channels), nullptr);
    if (t.kind == "activation") {
      if (std::isfinite(t.snr_db)) worksheet_write_number(ws, row, 7, t.snr_db, nullptr);
      worksheet_write_number(ws, row, 8, t.saturated, nullptr);
    }
    worksheet_write_string(ws, row, 9, t.warning.c_str(), nullptr);
    worksheet_write_string(ws, row, 10, t.note.c_str(), nullptr);
  }
  worksheet_set_column(ws, 0, 0, 40, nullptr);
  worksheet_set_column(ws, 9, 10, 60, nullptr);
  closeWorkbook(wb, tmp, path);
}

}  // namespace

void writeQuantizeTable(const QuantizeReport& r, const std::filesystem::path& file) {
  std::string ext = file.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".xlsx") quantXlsx(r, file);
  else if (ext == ".html" || ext == ".htm") writeFileAtomic(file, quantHtml(r));
  else if (ext == ".csv") writeFileAtomic(file, quantCsv(r));
  else fail(ErrorCode::kInvalidArgument, "{}: a quantization table is .csv, .xlsx or .html", file.string());
}

}  // namespace npuc
