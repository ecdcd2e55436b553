// Package server is the controller's webhook server: controller-runtime's
// webhook.Server for registering paths (its per-path request metrics and
// mux), served by an http.Server whose every connection is bounded in
// time, whoever opened it: the TLS handshake and a request's headers
// (ReadHeaderTimeout), a whole request (ReadTimeout), its answer
// (WriteTimeout), an idle kept-alive connection (IdleTimeout), and the
// headers' size. controller-runtime's own server takes no option for
// them. What one caller may cost a path (rates, in-flight budgets, body
// size) is package admission's guard.
//
// Example:
//
//	s := server.New(webhook.Options{Port: 9443, CertDir: dir, TLSOpts: tlsOpts})
//	mgr, _ := ctrl.NewManager(cfg, ctrl.Options{WebhookServer: s})
package server
