// EvalShift report: draws the per-example rows from the embedded JSON, one page at a time.
// Every value from a model or a tool reaches the page through textContent, never as markup.
(function () {
  "use strict";
  var started = performance.now();
  var data = JSON.parse(document.getElementById("evalshift-data").textContent);
  var rows = data.examples || [];
  // Empty lists are left out of the embedded rows to save bytes; put them back once.
  rows.forEach(function (row) {
    ["tags", "labels", "tools_called", "regressions", "errors"].forEach(function (key) { row[key] = row[key] || []; });
  });
  var filters = data.filters || {};
  var models = data.models || {};
  var PAGE_SIZE = 50;
  var SEVERITIES = ["low", "medium", "high", "critical"];
  var state = { label: "", tag: "", severity: "", round: "", q: "", only: false, page: 0 };
  var visible = rows;

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  function byId(id) { return document.getElementById(id); }
  function fmt(x) { return typeof x === "number" ? x.toFixed(2) : "—"; }

  function fillSelect(select, values) {
    values.forEach(function (v) {
      var opt = el("option", null, v);
      opt.value = String(v);
      select.appendChild(opt);
    });
  }
  fillSelect(byId("f-label"), filters.labels || []);
  fillSelect(byId("f-tag"), filters.tags || []);
  fillSelect(byId("f-severity"), (filters.severities || []).map(function (s) { return s; }));
  var rounds = [];
  for (var k = 1; k <= (filters.rounds || 1); k++) rounds.push(k);
  fillSelect(byId("f-round"), rounds);
  if ((filters.rounds || 1) <= 1) byId("f-round").disabled = true;

  function divergedRounds(row) {
    if (row.diverged_rounds) return row.diverged_rounds;
    return row.changed ? [1] : [];
  }

  function matches(row) {
    if (state.only && !(row.regressions && row.regressions.length)) return false;
    if (state.label && row.labels.indexOf(state.label) < 0) return false;
    if (state.tag && row.tags.indexOf(state.tag) < 0) return false;
    if (state.severity && SEVERITIES.indexOf(row.severity) < SEVERITIES.indexOf(state.severity)) return false;
    if (state.round && divergedRounds(row).indexOf(Number(state.round)) < 0) return false;
    if (state.q) {
      var hay = (String(row.example_id) + " " + (typeof row.input === "string" ? row.input : JSON.stringify(row.input))).toLowerCase();
      if (hay.indexOf(state.q) < 0) return false;
    }
    return true;
  }

  function chipList(parent, items, cls) {
    items.forEach(function (item) { add(parent, el("span", cls || "chip", item)); parent.appendChild(document.createTextNode(" ")); });
  }

  function pane(title, text) {
    var box = el("div", "pane");
    add(box, el("h4", null, title));
    add(box, el("pre", null, text === null || text === undefined ? "(no text)" : text));
    return box;
  }

  var OP_MARK = { same: "=", changed: "~ arguments", replaced: "≠ other tool", removed: "− removed", added: "+ added" };

  function traceDiff(items) {
    var table = el("table", "diff");
    var head = add(add(table, el("thead")), el("tr"));
    add(head, el("th", null, "Item"));
    add(head, el("th", null, "Source " + (models.source || "")));
    add(head, el("th", null, "Target " + (models.target || "")));
    var body = add(table, el("tbody"));
    items.forEach(function (item) {
      var tr = add(body, el("tr", "op-" + item.op));
      var prefix = item.round ? "Round " + item.round + ": " : "";
      add(tr, el("td", "op", prefix + (OP_MARK[item.op] || item.op)));
      add(tr, el("td", "src", item.source === null ? (item.target === null ? "(no tool calls)" : "—") : item.source));
      add(tr, el("td", "tgt", item.target === null ? (item.source === null ? "(no tool calls)" : "—") : item.target));
    });
    return table;
  }

  function textDiff(segments) {
    var pre = el("pre", "textdiff");
    segments.forEach(function (seg) {
      var tag = seg[0] === "-" ? "del" : seg[0] === "+" ? "ins" : "span";
      add(pre, el(tag, null, seg[1]));
    });
    return pre;
  }

  function plainList(title, items, cls) {
    var box = el("div");
    add(box, el("h4", null, title));
    var ul = add(box, el("ul", cls || "plain"));
    items.forEach(function (item) { add(ul, el("li", null, item)); });
    return box;
  }

  function evidence(row) {
    var box = el("div", "evidence");
    if (row.input !== null && row.input !== undefined) {
      box.appendChild(plainList("Input", [typeof row.input === "string" ? row.input : JSON.stringify(row.input)]));
    }
    if (row.errors && row.errors.length) box.appendChild(plainList("Errors", row.errors, "plain error"));
    (row.regressions || []).forEach(function (reg) {
      var title = reg.evaluator + "." + reg.name + (reg.side ? " (" + reg.side + ")" : "") +
        ": " + fmt(reg.source_score) + " → " + fmt(reg.target_score) +
        (reg.labels.length ? " · " + reg.labels.join(", ") : "") + (reg.severity ? " · " + reg.severity : "");
      var part = add(box, el("div"));
      add(part, el("h4", null, title));
      if (reg.expected) part.appendChild(plainList("Expected", reg.expected));
      if (reg.fields) part.appendChild(plainList("Fields", reg.fields, "fields"));
      if (reg.notes) part.appendChild(plainList("Notes", reg.notes));
    });
    if (row.trace_diff) {
      var t = add(box, el("div"));
      add(t, el("h4", null, "Trace diff (source → target)"));
      t.appendChild(traceDiff(row.trace_diff));
    }
    if (row.text_diff) {
      var d = add(box, el("div"));
      add(d, el("h4", null, "Text diff (− source, + target)"));
      d.appendChild(textDiff(row.text_diff));
    }
    if (!row.trace_diff && !row.text_diff) {
      var panes = add(box, el("div", "panes"));
      panes.appendChild(pane("Source text", row.source_text));
      panes.appendChild(pane("Target text", row.target_text));
    }
    if (row.tool_results) box.appendChild(plainList("Recorded tool results", row.tool_results));
    return box;
  }

  function renderRow(body, row) {
    var regressed = row.regressions && row.regressions.length;
    var tr = add(body, el("tr", "example" + (regressed ? " regressed" : "")));
    add(add(tr, el("td")), el("code", null, row.example_id));
    chipList(add(tr, el("td")), row.tags);
    var tools = add(tr, el("td", "tools"));
    row.tools_called.forEach(function (line) { add(tools, el("div", null, line)); });
    chipList(add(tr, el("td")), row.labels, "chip mono");
    var sev = add(tr, el("td"));
    if (row.severity) add(sev, el("span", "sev sev-" + row.severity, row.severity));
    var detailRow = add(body, el("tr", "detail"));
    var cell = add(detailRow, el("td"));
    cell.colSpan = 5;
    var details = add(cell, el("details"));
    add(details, el("summary", null, "Evidence for " + row.example_id));
    details.appendChild(evidence(row));
  }

  function render() {
    var body = byId("rows");
    while (body.firstChild) body.removeChild(body.firstChild);
    var pages = Math.max(1, Math.ceil(visible.length / PAGE_SIZE));
    if (state.page >= pages) state.page = pages - 1;
    var start = state.page * PAGE_SIZE;
    var slice = visible.slice(start, start + PAGE_SIZE);
    slice.forEach(function (row) { renderRow(body, row); });
    byId("count").textContent = visible.length
      ? "Showing " + (start + 1) + "–" + (start + slice.length) + " of " + visible.length + " examples (" + rows.length + " in the run)"
      : "No example matches these filters.";
    byId("page").textContent = "Page " + (state.page + 1) + " of " + pages;
    byId("prev").disabled = state.page === 0;
    byId("next").disabled = state.page >= pages - 1;
  }

  function refilter() {
    visible = rows.filter(matches);
    state.page = 0;
    writeHash();
    render();
  }

  [["f-label", "label"], ["f-tag", "tag"], ["f-severity", "severity"], ["f-round", "round"]].forEach(function (pair) {
    byId(pair[0]).addEventListener("change", function (ev) { state[pair[1]] = ev.target.value; refilter(); });
  });
  byId("f-q").addEventListener("input", function (ev) { state.q = ev.target.value.trim().toLowerCase(); refilter(); });
  byId("f-only").addEventListener("change", function (ev) { state.only = ev.target.checked; refilter(); });
  byId("filters").addEventListener("submit", function (ev) { ev.preventDefault(); });
  byId("filters").addEventListener("reset", function () {
    state = { label: "", tag: "", severity: "", round: "", q: "", only: false, page: 0 };
    setTimeout(refilter, 0);
  });
  byId("prev").addEventListener("click", function () { state.page -= 1; render(); byId("h-examples").focus(); });
  byId("next").addEventListener("click", function () { state.page += 1; render(); byId("h-examples").focus(); });

  // Filters live in the URL fragment (#label=...&tag=...), so a filtered view can be linked to.
  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    [["label", "f-label"], ["tag", "f-tag"], ["severity", "f-severity"], ["round", "f-round"]].forEach(function (pair) {
      var value = params.get(pair[0]);
      if (value === null) return;
      var select = byId(pair[1]);
      select.value = value;
      if (select.value === value) state[pair[0]] = value;
    });
    if (params.get("q")) { byId("f-q").value = params.get("q"); state.q = params.get("q").trim().toLowerCase(); }
    if (params.get("only") === "1") { byId("f-only").checked = true; state.only = true; }
  }
  function writeHash() {
    var params = new URLSearchParams();
    ["label", "tag", "severity", "round"].forEach(function (key) { if (state[key]) params.set(key, state[key]); });
    if (state.q) params.set("q", state.q);
    if (state.only) params.set("only", "1");
    var hash = params.toString();
    try { history.replaceState(null, "", hash ? "#" + hash : location.pathname); } catch (e) { /* file:// in some browsers */ }
  }

  readHash();
  visible = rows.filter(matches);
  render();
  // Read by the benchmark and the browser test: the script ran and how long the first page took.
  document.documentElement.setAttribute("data-rendered-ms", (performance.now() - started).toFixed(1));
})();
