# The HCL twin of clusters/demo.yaml. Only the cluster name differs
# (two clusters in one repository cannot share a name).

locals {
  controller = ["controller"]
}

cluster "demo-hcl" {
  release = "quickstart-1.0"
  mode    = "ha"
  plugins = ["monitoring"]

  components = [
    "hypervisor:qemu",
    "network:neutron:core:ml2",
    "network:neutron:ml2:vlan",
    "storage:block:lvm",
    "additional_service:monitoring",
  ]

  settings = {
    "common.debug.value" = true
  }

  tags = {
    backup = { has_primary = false }
  }

  # A one-line HCL block may hold only one argument, so each node takes several lines.
  node "node-1" {
    id    = 1
    roles = local.controller
  }

  node "node-2" {
    id    = 2
    roles = local.controller
    tags {
      assign = ["backup"]
    }
  }

  node "node-3" {
    id    = 3
    roles = local.controller
  }

  node "node-4" {
    id    = 4
    roles = ["compute"]
  }

  node "node-5" {
    id    = 5
    roles = ["compute", "storage"]
  }

  node "node-6" {
    id    = 6
    roles = ["monitor"]
  }

  # Many similar nodes: one block with for_each makes one node per element,
  # named "<label>-<each.key>" (or by a `name` attribute). It is not used here, so
  # the two clusters stay identical; uncommented, it adds compute-a (id 7) and
  # compute-b (id 8):
  #
  # node "compute" {
  #   for_each = { a = 7, b = 8 }
  #   id       = each.value
  #   roles    = ["compute"]
  # }
}
