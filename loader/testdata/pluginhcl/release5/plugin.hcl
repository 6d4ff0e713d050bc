# A release-as-a-plugin package (5.0.0) written in HCL.
locals {
  os = "Ubuntu"
}

plugin "ubuntu-newton" {
  title           = "Ubuntu Newton"
  version         = "10.0.0"
  package_version = "5.0.0"
  description     = "OpenStack Newton on Ubuntu 16.04"
  licenses        = ["Apache License Version 2.0"]
  authors         = ["Fuel Team"]
  homepage        = "https://example.org/newton"
  groups          = []
}

release "newton-10.0" {
  release_name            = "ubuntu-newton"
  description             = "OpenStack Newton on Ubuntu 16.04"
  operating_system        = local.os
  base_release_path       = "base.yaml"
  deployment_scripts_path = "deployment_scripts/"
  repository_path         = "repositories/ubuntu"

  role "cinder" {
    name        = "Cinder"
    description = "Block storage"
  }

  tag "cinder" {
    has_primary = false
  }

  graph "default" {
    task "globals" {
      type       = "puppet"
      version    = "2.1.0"
      tags       = ["/.*/"]
      parameters = { puppet_manifest = "globals.pp", puppet_modules = "modules", timeout = 120 }
    }
    task "hiera" {
      type     = "puppet"
      version  = "2.1.0"
      tags     = ["*"]
      requires = ["globals"]
      cross_depends = [{ name = "globals", role = "self" }]
      parameters = { puppet_manifest = "hiera.pp", puppet_modules = "modules", timeout = 120 }
    }
  }
}

# Outside the release block: goes into the plugin's only release.
graph "provision" {
  tasks_path = "graphs/provision.yaml"
}
