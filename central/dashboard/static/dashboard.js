// The dashboard's only script: copy buttons. Everything else works
// without JavaScript; the Content-Security-Policy allows no inline script.
document.addEventListener("click", function (ev) {
  var btn = ev.target.closest("button.copy");
  if (!btn) return;
  var field = document.getElementById(btn.dataset.copy);
  if (!field) return;
  field.select();
  var done = function () { btn.textContent = "Copied"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(done, function () { document.execCommand("copy"); done(); });
  } else {
    document.execCommand("copy");
    done();
  }
});
