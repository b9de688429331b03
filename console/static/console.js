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
  // Pages marked data-refresh="N" reload every N seconds while visible and no form is being filled in.
  var every = parseInt(document.body.dataset.refresh || "0", 10);
  if (every > 0) {
    setInterval(function () {
      var active = document.activeElement;
      var typing = active && (active.tagName === "INPUT" || active.tagName === "TEXTAREA" || active.tagName === "SELECT");
      if (!document.hidden && !typing) { location.reload(); }
    }, every * 1000);
  }
})();
