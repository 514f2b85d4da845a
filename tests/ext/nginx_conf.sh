# shellcheck shell=bash
# nginx_conf DIR PORT ROOT [ADDRESS [WORKERS]]: writes DIR/nginx.conf, an
# nginx of its own (sourced by tests/ext/preload_cases.sh and the benches):
# master and WORKERS (2) worker processes in the foreground (daemon off);
# WORKERS 0: one process, no master, serving itself; epoll,
# sendfile, serving ROOT on ADDRESS:PORT (127.0.0.1; IPv6 in brackets),
# every file it writes under DIR. Run it
# as `nginx -e DIR/error.log -c DIR/nginx.conf -p DIR`. user root: run by
# root, workers read ROOT and write counts wherever the caller's files
# are (the directive is ignored otherwise). nginx keeps a connection for
# as many requests as the client makes (keepalive_requests).
nginx_conf() {
  local d=$1 port=$2 root=$3 addr=${4:-127.0.0.1} workers=${5:-2} master=on
  [ "$workers" = 0 ] && master=off workers=1
  mkdir -p "$d"
  cat >"$d/nginx.conf" <<NGX
daemon off;
master_process $master;
worker_processes $workers;
user root;
pid $d/nginx.pid;
error_log $d/error.log;
events { use epoll; worker_connections 256; }
http {
  access_log off;
  sendfile on;
  keepalive_timeout 30;
  keepalive_requests 1000000;
  client_body_temp_path $d/body;
  proxy_temp_path $d/proxy;
  fastcgi_temp_path $d/fastcgi;
  uwsgi_temp_path $d/uwsgi;
  scgi_temp_path $d/scgi;
  server { listen $addr:$port; root $root; }
}
NGX
}
