// Rack elevations, one row at a time: racks and devices from the JSON block named by each
// viewer's data-source, drawn with DOM elements (text set as textContent, never as HTML).
// Long tables arrive as JSON next to their empty body and are built when first opened.
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
  // Everything under root that needs a script: called for the page, and again by the planner
  // for each section it swaps in (window.clusterforgeReport.init).
  function init(root) {
    root.querySelectorAll("details").forEach(function (details) {
      if (details.open) { fillTable(details); }
      details.addEventListener("toggle", function () {
        if (details.open) { fillTable(details); }
      });
    });
    function drawRow(view, data, rowIndex) {
      var target = view.querySelector(".elevation-row");
      var uPx = Number(view.querySelector(".zoom").value);
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
    root.querySelectorAll(".elevations").forEach(function (view) {
      var data = JSON.parse(document.getElementById(view.dataset.source).textContent);
      var picker = view.querySelector(".row-picker");
      data.rows.forEach(function (row, i) {
        var option = document.createElement("option");
        option.value = String(i);
        option.textContent = "row " + row[0] + " (" + row[1].length + " racks)";
        picker.appendChild(option);
      });
      var redraw = function () { drawRow(view, data, Number(picker.value || 0)); };
      picker.addEventListener("change", redraw);
      view.querySelector(".zoom").addEventListener("input", redraw);
      if (data.rows.length > 0) { redraw(); }
    });
  }
  window.clusterforgeReport = { init: init };
  init(document);
})();
