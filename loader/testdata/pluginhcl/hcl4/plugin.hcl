# The HCL twin of ../yaml4 (only the plugin name differs).
locals {
  controller = "sdn-controller"
  os_volume  = { allocate_size = "min", id = "os" }
}

plugin "sdn-hcl" {
  title           = "SDN plugin"
  version         = "1.0.0"
  package_version = "4.0.0"
  description     = "An SDN controller for Neutron"
  fuel_version    = ["9.0"]
  licenses        = ["Apache License Version 2.0"]
  authors         = ["Fuel Team"]
  homepage        = "https://example.org/sdn"
  groups          = ["network"]
  is_hotpluggable = false
  releases = [{
    os                      = "ubuntu"
    version                 = "mitaka-9.0"
    mode                    = ["ha"]
    deployment_scripts_path = "deployment_scripts/"
    repository_path         = "repositories/ubuntu"
  }]

  attributes = {
    metadata = {
      group        = "network"
      restrictions = [{ condition = "cluster:net_provider != 'neutron'", action = "hide" }]
    }
    mode = {
      type   = "radio"
      weight = 10
      value  = "l3"
      label  = "Mode"
      values = [
        { data = "l2", label = "L2" },
        { data = "l3", label = "L3" },
      ]
    }
    ratio    = { type = "text", value = 0.5, label = "Overcommit ratio" }
    password = { type = "password", value = "secret", label = "Password" }
  }

  volumes_roles_mapping = {
    (local.controller) = [local.os_volume, { allocate_size = "all", id = "sdn-db" }]
    sdn-gateway        = [local.os_volume]
  }
}

role "sdn-controller" {
  name               = "SDN controller"
  description        = "Runs the SDN controller"
  has_primary        = true
  public_ip_required = false
  weight             = 100
  conflicts          = ["compute", "controller"]
  limits             = { min = 1, max = 3, recommended = 3 }
  tags               = [local.controller, "sdn-db"]
  update_required    = ["controller"]
}

role "sdn-gateway" {
  name        = "SDN gateway"
  description = "Routes traffic between the SDN and the outside"
  conflicts   = "*"
  restrictions = [{
    condition = "settings:sdn.metadata.enabled == false"
    message   = "Enable the SDN plugin"
  }]
}

volume "sdn-db" {
  type     = "vg"
  min_size = { generator = "calc_gb_to_mb", generator_args = [2] }
  label    = "SDN database"
  items = [{
    mount       = "/var/lib/sdn"
    type        = "lv"
    name        = "sdn"
    file_system = "ext4"
    size        = { generator = "calc_total_vg", generator_args = ["sdn-db"] }
  }]
}

component "network:neutron:ml2:sdn" {
  label       = "SDN"
  description = "SDN network backend"
  bind        = [["settings:sdn.mode.value", "l3"]]
  compatible {
    name = "hypervisor:qemu"
  }
  requires = [{ name = "network:neutron:core:ml2" }]
  incompatible {
    name    = "network:neutron:ml2:vlan"
    message = "SDN is not compatible with VLAN segmentation"
  }
  incompatible {
    name    = "additional_service:sahara"
    message = "Not tested with Sahara"
  }
}

task "sdn-controller" {
  type         = "group"
  version      = "2.1.0"
  tags         = [local.controller]
  requires     = ["controller"]
  required_for = ["deploy_end"]
  parameters = {
    strategy = { type = "parallel" }
  }
}

task "sdn-install" {
  type         = "puppet"
  version      = "2.1.0"
  tags         = [local.controller, "/^primary-sdn.*/"]
  requires     = ["hiera", "globals"]
  required_for = ["deploy_end"]
  cross_depends {
    name = "sdn-db"
    role = "self"
  }
  cross_depended_by = [{ name = "/^neutron-.*/", policy = "all" }]
  condition         = { yaql_exp = "changed($.sdn)" }
  parameters = {
    puppet_manifest = "puppet/manifests/sdn.pp"
    puppet_modules  = "puppet/modules"
    timeout         = 3600
  }
}

network_role "sdn/api" {
  default_mapping = "management"
  properties = {
    subnet  = true
    gateway = false
    vip     = [{ name = "sdn_vip", namespace = "haproxy" }]
  }
}
