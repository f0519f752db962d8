// Passkeys (WebAuthn): a button carrying `data-passkey-create` or `data-passkey-get` (the server's
// options, JSON) calls navigator.credentials; the credential's answer,
// as JSON with base64url fields, goes into the form's `[data-passkey-response]` input, and the
// form is submitted. The server verifies everything; this only moves bytes.
'use strict';

function fromB64u(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)).buffer;
}

function toB64u(buffer) {
  let binary = '';
  for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const withIds = (list) => (list || []).map((c) => ({ ...c, id: fromB64u(c.id) }));

async function create(o) {
  const cred = await navigator.credentials.create({
    publicKey: { ...o, challenge: fromB64u(o.challenge), user: { ...o.user, id: fromB64u(o.user.id) }, excludeCredentials: withIds(o.excludeCredentials) },
  });
  const r = cred.response;
  return {
    id: cred.id,
    rawId: toB64u(cred.rawId),
    type: cred.type,
    authenticatorAttachment: cred.authenticatorAttachment || undefined,
    clientExtensionResults: cred.getClientExtensionResults(),
    response: { clientDataJSON: toB64u(r.clientDataJSON), attestationObject: toB64u(r.attestationObject), transports: r.getTransports ? r.getTransports() : [] },
  };
}

async function get(o) {
  const cred = await navigator.credentials.get({ publicKey: { ...o, challenge: fromB64u(o.challenge), allowCredentials: withIds(o.allowCredentials) } });
  const r = cred.response;
  return {
    id: cred.id,
    rawId: toB64u(cred.rawId),
    type: cred.type,
    authenticatorAttachment: cred.authenticatorAttachment || undefined,
    clientExtensionResults: cred.getClientExtensionResults(),
    response: {
      clientDataJSON: toB64u(r.clientDataJSON),
      authenticatorData: toB64u(r.authenticatorData),
      signature: toB64u(r.signature),
      userHandle: r.userHandle ? toB64u(r.userHandle) : undefined,
    },
  };
}

function say(form, text) {
  const status = form.querySelector('[data-passkey-status]');
  if (status) status.textContent = text;
}

document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-passkey-button]') : null;
  const form = button ? button.closest('form') : null;
  if (!form) return;
  event.preventDefault();
  if (!window.PublicKeyCredential) return say(form, 'This browser does not support passkeys.');
  try {
    const answer = button.dataset.passkeyCreate ? await create(JSON.parse(button.dataset.passkeyCreate)) : await get(JSON.parse(button.dataset.passkeyGet));
    form.querySelector('[data-passkey-response]').value = JSON.stringify(answer);
    // A passkey stands in for the password and code fields a form may also have.
    for (const input of form.querySelectorAll('[data-passkey-alternative]')) input.required = false;
    form.requestSubmit();
  } catch (err) {
    say(form, err && err.name === 'NotAllowedError' ? 'The passkey request was cancelled or timed out. Try again.' : 'The passkey could not be used: ' + (err && err.message));
  }
});
