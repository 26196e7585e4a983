// The Optimize page: posts the spec's YAML to /api/optimize, draws the front it gets back
// (the chart as the server rendered it, the table from the data, every cell as textContent),
// and loads a front point into the planner (/api/optimize/open, then the planner's page).
(function () {
  "use strict";
  var form = document.getElementById("optimize-form");
  var text = document.getElementById("spec-yaml");
  var error = document.getElementById("optimize-error");
  var status = document.getElementById("status");
  var chart = document.getElementById("front-chart");
  var tableEl = document.getElementById("front-table");
  var body = tableEl.querySelector("tbody");
  var winner = document.getElementById("winner");
  var summary = document.getElementById("search-summary");

  function showError(message) {
    error.textContent = message;
    error.hidden = !message;
  }

  function cell(row, value, numeric) {
    var td = document.createElement("td");
    td.textContent = value;
    if (numeric) { td.className = "num"; }
    row.appendChild(td);
  }

  function openPoint(point) {
    status.textContent = "loading " + point.design + " into the planner...";
    fetch("/api/optimize/open", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ spec: point.spec })
    }).then(function (r) {
      return r.json().then(function (data) { return { ok: r.ok, data: data }; });
    }).then(function (answer) {
      if (!answer.ok) { showError(String(answer.data.detail)); status.textContent = ""; return; }
      window.location.href = "/";
    }).catch(function (e) { status.textContent = "request failed: " + e; });
  }

  function showFront(result) {
    chart.innerHTML = result.chart_svg;
    body.textContent = "";
    result.front.forEach(function (p, i) {
      var row = document.createElement("tr");
      cell(row, String(i + 1), true);
      cell(row, p.design, false);
      cell(row, "TP" + p.plan.tp + " PP" + p.plan.pp + " DP" + p.plan.dp, false);
      cell(row, (p.mfu * 100).toFixed(0) + "%", true);
      cell(row, p.time_to_train_days.toFixed(1), true);
      cell(row, (p.cost_usd / 1e6).toFixed(2), true);
      cell(row, p.usd_per_gpu_hour.toFixed(2), true);
      cell(row, (p.commitment_usd / 1e6).toFixed(2), true);
      cell(row, p.facility_mw.toFixed(2), true);
      cell(row, p.binding_constraint, false);
      var td = document.createElement("td");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "open-point";
      button.textContent = "Open in planner";
      button.addEventListener("click", function () { openPoint(p); });
      td.appendChild(button);
      row.appendChild(td);
      body.appendChild(row);
    });
    tableEl.hidden = result.front.length === 0;
    winner.textContent = "";
    var lines = result.winner === null ? ["No design meets the constraints."] : [
      "Winner (" + result.objective + "): " + result.winner.winner,
      "Limited by: " + result.winner.limited_by
    ];
    if (result.winner !== null && result.winner.runner_up !== null) {
      lines.push("Runner-up: " + result.winner.runner_up);
      lines.push("The runner-up lacks: " + result.winner.runner_up_lacks);
    }
    lines.forEach(function (line) {
      var p = document.createElement("p");
      p.textContent = line;
      winner.appendChild(p);
    });
    summary.textContent = result.summary;
  }

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    showError("");
    status.textContent = "searching...";
    fetch("/api/optimize", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ spec_yaml: text.value })
    }).then(function (r) {
      return r.json().then(function (data) { return { ok: r.ok, data: data }; });
    }).then(function (answer) {
      if (!answer.ok) {
        var d = answer.data;
        showError(typeof d.detail === "string" ? d.detail : JSON.stringify(d.detail));
        status.textContent = "the search did not run: see the message under the spec";
        return;
      }
      showFront(answer.data);
      status.textContent = "searched in " + answer.data.elapsed_s.toFixed(1) + " s";
    }).catch(function (e) { status.textContent = "request failed: " + e; });
  });
})();
