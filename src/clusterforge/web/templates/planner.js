// The planner form: on every change, post the form to /api/form; show every error at its
// field with its one-click fix and mark the report out of date, or bring the report up to
// date: only the sections that changed when the server says so, else the whole frame.
(function () {
  "use strict";
  var form = document.getElementById("spec-form");
  var status = document.getElementById("status");
  var pane = document.getElementById("report-pane");
  var stale = document.getElementById("stale");
  var frame = document.getElementById("report");
  var fixAll = document.getElementById("fix-all");
  var pending = null;
  var allFixes = {};

  function collect() {
    var values = {};
    var enabled = {};
    form.querySelectorAll(".section-toggle").forEach(function (t) { enabled[t.name] = t.checked; });
    form.querySelectorAll(".field").forEach(function (field) {
      var path = field.dataset.path;
      var kind = field.dataset.kind;
      if (kind === "checkbox") {
        values[path] = field.querySelector("input").checked;
      } else if (kind === "multi") {
        values[path] = Array.from(field.querySelectorAll("input:checked")).map(function (i) { return i.value; });
      } else {
        values[path] = field.querySelector("input, select").value;
      }
    });
    return { values: values, enabled: enabled };
  }

  function setValue(path, value) {
    var field = form.querySelector('.field[data-path="' + CSS.escape(path) + '"]');
    if (!field) { return; }
    var kind = field.dataset.kind;
    if (kind === "checkbox") {
      field.querySelector("input").checked = Boolean(value);
    } else if (kind === "multi") {
      var wanted = (Array.isArray(value) ? value : [value]).map(String);
      field.querySelectorAll("input").forEach(function (i) { i.checked = wanted.indexOf(i.value) >= 0; });
    } else {
      field.querySelector("input, select").value = String(value);
    }
  }

  function describe(fix) {
    return Object.keys(fix).map(function (path) {
      var v = fix[path];
      return path + " = " + (Array.isArray(v) ? v.join(", ") : String(v));
    }).join("; ");
  }

  function apply(fix) {
    Object.keys(fix).forEach(function (path) { setValue(path, fix[path]); });
    submit();
  }

  function showErrors(errors, fixes) {
    form.querySelectorAll(".error").forEach(function (p) { p.hidden = true; p.textContent = ""; });
    form.querySelectorAll(".fix").forEach(function (b) { b.remove(); });
    form.querySelectorAll(".field.invalid").forEach(function (f) { f.classList.remove("invalid"); });
    allFixes = {};
    Object.keys(errors).forEach(function (path) {
      var target = document.getElementById("error-" + path) || document.getElementById("error-");
      target.textContent = errors[path];
      target.hidden = false;
      var field = target.closest(".field");
      if (field) { field.classList.add("invalid"); }
      var fix = fixes[path];
      if (fix) {
        Object.assign(allFixes, fix);
        var button = document.createElement("button");
        button.type = "button";
        button.className = "fix";
        button.textContent = "Fix: " + describe(fix);
        button.addEventListener("click", function () { apply(fix); });
        target.after(button);
      }
    });
    fixAll.hidden = Object.keys(fixes).length < 2;
  }

  function markStale(isStale) {
    pane.classList.toggle("stale", isStale);
    stale.hidden = !isStale;
  }

  // Swap one section of the report for its new HTML; scripts inside it run again.
  function swapSection(doc, id, html) {
    var old = doc.getElementById(id);
    if (!old) { return false; }
    var holder = doc.createElement("div");
    holder.innerHTML = html;
    var fresh = holder.firstElementChild;
    old.replaceWith(fresh);
    fresh.querySelectorAll("script").forEach(function (s) {
      var run = doc.createElement("script");
      Array.from(s.attributes).forEach(function (a) { run.setAttribute(a.name, a.value); });
      run.textContent = s.textContent;
      s.replaceWith(run);
    });
    var report = frame.contentWindow.clusterforgeReport;
    if (report) { report.init(fresh); }
    return true;
  }

  function refresh(result) {
    var doc = frame.contentDocument;
    if (result.changed === null || !doc) {
      frame.src = "/report.html?v=" + result.version;
      return Promise.resolve("reloaded the report");
    }
    return Promise.all(result.changed.map(function (id) {
      return fetch("/report/section/" + encodeURIComponent(id) + "?v=" + result.version)
        .then(function (r) { return r.text(); })
        .then(function (html) { return swapSection(doc, id, html); });
    })).then(function (swapped) {
      if (swapped.indexOf(false) >= 0) { frame.src = "/report.html?v=" + result.version; }
      return result.changed.length ? "updated " + result.changed.join(", ") : "nothing changed";
    });
  }

  function submit() {
    status.textContent = "planning...";
    fetch("/api/form", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(collect())
    }).then(function (r) { return r.json(); }).then(function (result) {
      showErrors(result.errors, result.fixes || {});
      markStale(!result.ok);
      if (!result.ok) {
        status.textContent = "the spec has errors: see the marked fields";
        return;
      }
      document.getElementById("headline").textContent = result.headline;
      return refresh(result).then(function (what) {
        status.textContent = "planned and rendered in " + result.elapsed_s.toFixed(2) + " s; " + what;
      });
    }).catch(function (e) { status.textContent = "request failed: " + e; });
  }

  fixAll.addEventListener("click", function () { apply(allFixes); });
  form.addEventListener("change", function () {
    if (pending) { clearTimeout(pending); }
    pending = setTimeout(submit, 150);
  });
  form.addEventListener("submit", function (e) { e.preventDefault(); submit(); });
})();
