// Chorus console: progressive enhancement only. Every action works without this file.
(function () {
  // A submitted form's buttons are disabled until the answer arrives, so a second click does
  // not send it again (the server would apply it once anyway: the form carries its requestId).
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    setTimeout(function () {
      form.querySelectorAll("button[type=submit]").forEach(function (b) { b.disabled = true; });
    }, 0);
  });
  function typing() {
    var active = document.activeElement;
    return active && (active.tagName === "INPUT" || active.tagName === "TEXTAREA" || active.tagName === "SELECT");
  }
  // Pages marked data-refresh="N" reload every N seconds while visible and no form is being filled
  // in; pages marked data-follow="<project>" also reload when an event of that project comes on the
  // event stream (GET /api/events), and while it is up they poll six times less often, for the
  // changes no event announces (creations, releases, closes).
  var every = parseInt(document.body.dataset.refresh || "0", 10);
  var timer = null;
  function poll(seconds) {
    if (timer) { clearInterval(timer); }
    timer = seconds > 0 ? setInterval(function () { if (!document.hidden && !typing()) { location.reload(); } }, seconds * 1000) : null;
  }
  var follow = document.body.dataset.follow;
  if (!follow || !window.EventSource) { poll(every); return; }
  var es = new EventSource("/console/events?scope=project&project=" + encodeURIComponent(follow));
  var pending = null;
  function soon() {
    if (pending) { return; }
    pending = setTimeout(function again() {
      if (document.hidden || typing()) { pending = setTimeout(again, 2000); return; }
      location.reload();
    }, 300);
  }
  (document.body.dataset.eventKinds || "").split(",").forEach(function (k) { if (k) { es.addEventListener(k, soon); } });
  es.onopen = function () {
    document.body.dataset.live = "on";
    poll(every * 6);
  };
  es.onerror = function () {
    document.body.dataset.live = "off";
    poll(every); // the browser reconnects by itself; until then, and if it gives up, poll as before
  };
})();
