// Rack elevations, one row at a time: racks and devices from the JSON block named by each
// viewer's data-source, drawn with DOM elements (text set as textContent, never as HTML).
// Long tables arrive as JSON next to their empty body and are built when first opened.
// Printing shows everything: every table opened and every row of racks drawn.
(function () {
  "use strict";
  function fillTable(details) {
    var data = details.querySelector("script.table-rows");
    var body = details.querySelector("tbody.lazy-rows");
    if (!data || !body || body.childElementCount > 0) { return; }
    var numeric = JSON.parse(body.dataset.numeric);
    var rows = document.createDocumentFragment();
    JSON.parse(data.textContent).forEach(function (row) {
      var tr = document.createElement("tr");
      row.forEach(function (cell, i) {
        var td = document.createElement("td");
        if (numeric[i]) { td.className = "num"; }
        td.textContent = cell;
        tr.appendChild(td);
      });
      rows.appendChild(tr);
    });
    body.appendChild(rows);
  }
  // One row of racks into target, uPx pixels per rack unit.
  function drawRacks(target, data, rowIndex, uPx) {
    target.replaceChildren();
    data.rows[rowIndex][1].forEach(function (rack) {
      var box = document.createElement("div");
      box.className = "rack";
      box.style.width = (uPx * 12) + "px";
      var title = document.createElement("div");
      title.className = "rack-title";
      title.textContent = rack[0] + " (" + rack[2] + " kW)";
      var body = document.createElement("div");
      body.className = "rack-body";
      body.style.height = (data.rack_u * uPx) + "px";
      rack[3].forEach(function (d) {
        var dev = document.createElement("div");
        dev.className = "device kind-" + d[2];
        dev.style.top = ((data.rack_u - (d[0] + d[1] - 1)) * uPx) + "px";
        dev.style.height = (d[1] * uPx) + "px";
        dev.title = "U" + d[0] + ": " + d[3] + " (" + d[4] + ")";
        dev.textContent = uPx >= 8 ? d[3] : "";
        body.appendChild(dev);
      });
      box.appendChild(title);
      box.appendChild(body);
      target.appendChild(box);
    });
  }
  // Everything under root that needs a script: called for the page, and again by the planner
  // for each section it swaps in (window.clusterforgeReport.init).
  function init(root) {
    root.querySelectorAll("details").forEach(function (details) {
      if (details.open) { fillTable(details); }
      details.addEventListener("toggle", function () {
        if (details.open) { fillTable(details); }
      });
    });
    root.querySelectorAll(".elevations").forEach(function (view) {
      var data = JSON.parse(document.getElementById(view.dataset.source).textContent);
      var picker = view.querySelector(".row-picker");
      data.rows.forEach(function (row, i) {
        var option = document.createElement("option");
        option.value = String(i);
        option.textContent = "row " + row[0] + " (" + row[1].length + " racks)";
        picker.appendChild(option);
      });
      var redraw = function () {
        var uPx = Number(view.querySelector(".zoom").value);
        drawRacks(view.querySelector(".elevation-row"), data, Number(picker.value || 0), uPx);
      };
      picker.addEventListener("change", redraw);
      view.querySelector(".zoom").addEventListener("input", redraw);
      if (data.rows.length > 0) { redraw(); }
    });
  }
  window.clusterforgeReport = { init: init };
  init(document);
  // Printing (or the PDF, which loads the page as "#print") shows everything the screen keeps
  // a click away: every table opened and filled, every row of racks drawn, small.
  var PRINT_U_PX = 4;
  var closed = [];
  function expandForPrint() {
    document.querySelectorAll("details:not([open])").forEach(function (details) {
      closed.push(details);
      details.open = true;
      fillTable(details);
    });
    document.querySelectorAll(".elevations").forEach(function (view) {
      var all = view.querySelector(".elevation-all");
      if (!all || all.childElementCount > 0) { return; }
      var data = JSON.parse(document.getElementById(view.dataset.source).textContent);
      data.rows.forEach(function (row, i) {
        var heading = document.createElement("h3");
        heading.textContent = "row " + row[0] + " (" + row[1].length + " racks)";
        var line = document.createElement("div");
        line.className = "elevation-row";
        drawRacks(line, data, i, PRINT_U_PX);
        all.appendChild(heading);
        all.appendChild(line);
      });
    });
  }
  function restoreAfterPrint() {
    closed.forEach(function (details) { details.open = false; });
    closed = [];
  }
  window.addEventListener("beforeprint", expandForPrint);
  window.addEventListener("afterprint", restoreAfterPrint);
  if (window.location.hash === "#print") { expandForPrint(); }
})();
