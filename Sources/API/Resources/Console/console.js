// The console's live updates, over one Server-Sent Events stream (/admin/live):
//   "tick" (every 2 s): queue figures; elements with data-stat="name" show them.
//   "job" (a job changed): elements with data-on="job" or data-on="job:<id>" reload their
//   fragment from data-src, and so do they when the stream opens (or reopens after a drop), for
//   what changed before it did. data-on="every:N" reloads every N seconds.
// No framework, no inline script: the page's Content-Security-Policy allows only this file.
(function () {
  "use strict";
  // Per element: "waiting" (a reload is due in 300 ms), "fetching", or "again" (an event came
  // while fetching: the answer may predate it, so fetch once more when it is in).
  var reloads = new Map();

  function reload(element) {
    var now = reloads.get(element);
    if (now === "waiting" || now === "again") return;
    if (now === "fetching") { reloads.set(element, "again"); return; }
    reloads.set(element, "waiting");
    setTimeout(function () {
      reloads.set(element, "fetching");
      fetch(element.getAttribute("data-src"), { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) { if (html !== null) element.innerHTML = html; })
        .catch(function () {})
        .finally(function () {
          var again = reloads.get(element) === "again";
          reloads.delete(element);
          if (again) reload(element);
        });
    }, 300);
  }

  function listeners(kind) {
    return Array.prototype.filter.call(document.querySelectorAll("[data-src][data-on]"), function (element) {
      return element.getAttribute("data-on").split(" ").indexOf(kind) >= 0;
    });
  }

  function showStats(stats) {
    Object.keys(stats).forEach(function (name) {
      document.querySelectorAll('[data-stat="' + name + '"]').forEach(function (element) {
        element.textContent = String(stats[name]);
      });
    });
    var state = document.getElementById("queue-state");
    if (state) state.classList.toggle("paused", stats.paused === true);
  }

  document.querySelectorAll("[data-src][data-on]").forEach(function (element) {
    element.getAttribute("data-on").split(" ").forEach(function (kind) {
      if (kind.indexOf("every:") === 0) {
        var seconds = Math.max(1, parseInt(kind.slice(6), 10) || 30);
        setInterval(function () { reload(element); }, seconds * 1000);
      }
    });
  });

  var state = document.getElementById("queue-state");
  if (!state || typeof EventSource === "undefined") return;
  var source = new EventSource("/admin/live");
  // Whatever changed between the page's rendering and the stream's (re)connection was never sent:
  // reload every job fragment once the stream is open.
  source.addEventListener("open", function () {
    Array.prototype.filter.call(document.querySelectorAll("[data-src][data-on]"), function (element) {
      return element.getAttribute("data-on").split(" ").some(function (kind) { return kind === "job" || kind.indexOf("job:") === 0; });
    }).forEach(reload);
  });
  source.addEventListener("tick", function (event) {
    try { showStats(JSON.parse(event.data)); } catch (e) {}
  });
  source.addEventListener("job", function (event) {
    listeners("job").forEach(reload);
    listeners("job:" + event.data).forEach(reload);
  });
})();
