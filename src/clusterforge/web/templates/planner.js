// The planner form: on every change, post the form to /api/form; show errors at their
// fields, or reload the report frame with the new version.
(function () {
  "use strict";
  var form = document.getElementById("spec-form");
  var status = document.getElementById("status");
  var pending = null;

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

  function showErrors(errors) {
    form.querySelectorAll(".error").forEach(function (p) { p.hidden = true; p.textContent = ""; });
    form.querySelectorAll(".field.invalid").forEach(function (f) { f.classList.remove("invalid"); });
    Object.keys(errors).forEach(function (path) {
      var target = document.getElementById("error-" + path) || document.getElementById("error-");
      target.textContent = errors[path];
      target.hidden = false;
      var field = target.closest(".field");
      if (field) { field.classList.add("invalid"); }
    });
  }

  function submit() {
    status.textContent = "planning...";
    fetch("/api/form", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(collect())
    }).then(function (r) { return r.json(); }).then(function (result) {
      showErrors(result.errors);
      if (result.ok) {
        document.getElementById("headline").textContent = result.headline;
        document.getElementById("report").src = "/report.html?v=" + result.version;
        status.textContent = "planned and rendered in " + result.elapsed_s.toFixed(2) + " s";
      } else {
        status.textContent = "the spec has errors: see the marked fields";
      }
    }).catch(function (e) { status.textContent = "request failed: " + e; });
  }

  form.addEventListener("change", function () {
    if (pending) { clearTimeout(pending); }
    pending = setTimeout(submit, 150);
  });
  form.addEventListener("submit", function (e) { e.preventDefault(); submit(); });
})();
